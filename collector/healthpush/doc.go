// Package healthpush sends an agent's health report to the gpuwatch server the
// moment it changes, so that a drain decision does not wait for a scrape, a
// remote-write batch or a query: the store stays the record, this is the fast
// path.
//
// The agent offers its report after every health cycle (Offer never blocks).
// A report whose verdict differs from the last one the server accepted (node or
// GPU state, severity, action, or the set of active conditions) is sent at
// once; an unchanged one is sent again as a heartbeat (default every 30 s) so
// the server knows the node is alive. Only the latest report matters: while
// the server is unreachable, newer reports replace older ones and the newest
// is retried with back-off. Reports go as JSON to POST
// <server>/api/gpuwatch/v1/health.
package healthpush
