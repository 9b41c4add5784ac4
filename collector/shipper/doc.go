// Package shipper is the agent's remote-write client: it sends every sample the
// agent collects to a Prometheus remote-write 1.0 endpoint (the gpuwatch server's
// /api/v1/write, VictoriaMetrics's /api/v1/write, or Prometheus's with
// --web.enable-remote-write-receiver) through a bounded queue that survives outages
// and agent restarts.
//
// # What is shipped
//
// The shipper sends what the exporter exposes on /metrics (Exporter.Publish's
// Exposition, read series by series with Exposition.Series rather than rendered
// into metric families), so a shipped series has exactly the labels a scrape shows, plus
// Options.ExtraLabels where a series lacks them: the agent passes node=<node> (which
// its exporter already puts on every series) and the instance and job a Prometheus
// scrape of it would add (agent.Options.Instance, Job), so a store fed by remote
// write holds the label sets a store fed by scraping does. Each sample keeps its collection time
// (telemetry.Sample.Time); series with no time of their own (the per-source
// self-metrics, build info) take the snapshot's time. The Go runtime's and the
// process's own series (go_*, process_*), which the HTTP handler adds at scrape
// time, stay scrape-only. A series is shipped again only
// when its timestamp moved: the 10-second fields ride along unchanged in every
// 1-second health snapshot and are sent once per collection, not ten times. The
// encoder does not even read them again: a snapshot part (collector.SamplePart)
// it has already seen under the same labelling is skipped whole, so a health
// cycle costs the series it collected, not the node's whole exposition. A
// timestamp that moved back (the clock stepped back) is shipped at once, for
// the store's out-of-order window to take, rather than held back until the
// clock has caught up.
//
// # Flow
//
// Enqueue (on the collection loop's goroutine) appends the snapshot to a short
// in-memory list and returns: it never blocks and costs the same whatever the queue
// holds. Run's encoder goroutine turns snapshots into records (a snappy-compressed
// prompb.WriteRequest of at most BatchSamples samples) and appends them to the
// queue; its sender takes records in order, merges small ones into requests of up
// to BatchSamples samples and posts them. 2xx commits a request; 5xx, 429 and
// network errors are retried with capped exponential back-off (honouring
// Retry-After); any other 4xx drops the request (counted as rejected, logged), so a
// poison batch never blocks the queue.
//
// # The queue, on disk
//
// With QueueDir set the queue is a directory of segment files named by the sequence
// number of their first record (00000000000000000042.seg), each a run of frames:
//
//	crc32c(rest) uint32 | payload length uint32 | samples uint32 | payload
//
// little-endian, the CRC (Castagnoli) covering length, samples and payload. A file
// "cursor" holds the sequence number of the oldest unsent record, rewritten
// (write to a temporary file, rename) after every delivered request; a new process
// on the same directory replays unsent records first, in order, with their original
// timestamps. Delivery is at least once: a crash between a delivery and the cursor
// update resends one request, which stores ignore as identical duplicates.
//
// Fsync policy: a record is written to the active segment as soon as it is encoded
// (an agent crash loses nothing written); the active segment is fsynced at most
// every SyncInterval (default 1 s) while it has unsynced records, when it is
// rotated (at SegmentBytes) and on shutdown. A machine crash may therefore lose the
// last SyncInterval of queued data, never more, and a torn tail is detected by its
// CRC. On start every segment is read and checked: a corrupt frame is logged and
// its samples counted (samples_dropped_total{reason="corrupt"}, when its header
// survived to say how many), and the rest of that segment, whose framing can no
// longer be trusted, is skipped and cut from the file, so a torn tail is counted
// once, not at every start; other segments are sent. The directory is locked
// (flock) so two agents never share it.
//
// Acknowledged, precisely: a record is acknowledged when its append returned,
// that is when its whole frame was handed to write(2); from then on killing the
// agent cannot lose it (it is in the page cache), and after the next fsync
// neither can a machine crash. A record is delivered when the store answered 2xx
// and the cursor was renamed past it; it is never sent again after that. An
// agent killed in the middle of a write leaves at most that one record torn, and
// one killed between a 2xx and the cursor's rename sends that one request again.
//
// Bound: the queue holds at most MaxBytes of unsent records; appending past it
// drops the oldest records first and counts their samples as queue_full. Segment
// files already sent are deleted as the cursor passes them, so the directory stays
// within MaxBytes plus one segment. With QueueDir "" the same queue lives in
// memory, with the same bound; there a segment whose records have all been sent
// is released at the next append, so a store that keeps up costs the memory of
// the last request, not of a segment filling up with delivered data.
//
// A full disk is a bound too. A segment is at most an eighth of the space free
// when it was started; when a write fails with ENOSPC (or EDQUOT) the oldest
// segment's unsent records are dropped, counted as queue_full, and its file
// deleted, until the record fits. When nothing of the queue's own is left to
// free, or the directory refuses writes for another reason (read-only, I/O
// errors), records are held in memory instead (at most 32 MiB or MaxBytes,
// oldest dropped first as queue_full) and still sent; the directory is tried
// again every 5 s. Records held in memory are lost if the agent stops before
// they are sent. Each refusal and each recovery is logged once, as is a cursor
// that cannot be written (a restart would then send again what was sent since).
// Collection never waits on any of this: Enqueue does not block.
//
// # Self-metrics
//
// The Shipper is a collector.Source named "shipper": the agent registers it, and
// gpuwatch_shipper_* (catalogued in telemetry/metrics.go) appear on /metrics and are
// shipped like every other series.
package shipper
