// Package nvlink is the agent's NVLink source. Per link of every GPU it emits
// gpuwatch_nvlink_up and the CRC flit, CRC data, replay and recovery error
// counters on the health schedule (CollectHealth), with dcgm-exporter's per-GPU
// sums (DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL) beside them, and the bytes each
// way on the full schedule (Collect) with DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL.
//
// Links are found once, at the first collection that can read a GPU: every index
// below NVML's NVLINK_MAX_LINKS whose state query does not answer
// ERROR_NOT_SUPPORTED or ERROR_INVALID_ARGUMENT is a link (18 on an H100, 12 on
// an A100). The same probe records what sits at the far end of each link
// (Remotes): an NVSwitch, another GPU of the node, or an IBM NPU.
//
// Traffic comes from the NVML field values FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX
// (KiB of payload, the link in ScopeId), which replace the per-link utilization
// counters that Ampere and later no longer keep. On a driver without those fields
// the source falls back to utilization counter 0, and only where its control
// says it counts bytes; it never reprograms the counters.
//
// Failures stay local as in the nvml source: NOT_SUPPORTED omits a value (a
// DCGM_FI_* per-GPU sum is emitted only when every link answered, so it never
// drops as a link goes missing), a lost GPU is skipped (the nvml source reports
// it lost), and a timeout skips the rest of that GPU for the cycle and is
// returned as an error naming GPU, link and call. Samples carry gpu_index and,
// per link, link; label sets are built once and shared, read-only.
package nvlink
