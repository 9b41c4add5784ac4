// Package ui is on-call's web UI, served by `gpuwatch server` at its root
// URL: the fleet (every GPU a cell coloured by health, or by measured
// utilization), one node's whole story (GPUs, ports, conditions with their
// evidence and the catalog's action, the Xid timeline, the drain
// controller's history, jobs, exclusions, alerts with their runbooks), one
// GPU's fault series as server-drawn SVG charts, the drain audit log with
// the budget, placement decisions and their explanations, and the fair-share
// standing.
//
// Pages are rendered on the server with html/template from the same
// in-process interfaces the JSON API answers from (the drain controller, the
// placement engine, the fair-share feeder, the store's Querier, the rules
// engine's alerts, the latest health reports); the CSS is embedded in the
// binary and nothing is loaded from elsewhere, so the UI works offline and
// without JavaScript.
//
// The UI never checks credentials: the front door (internal/auth) does, from
// the server's access table, and accepts the session cookie the login page
// sets. Actions (drain, resume, budget reset) call the drain controller's
// audited methods with the person's token name as the actor, as the API
// does; their forms carry the session's CSRF token, which the front door
// checks.
package ui
