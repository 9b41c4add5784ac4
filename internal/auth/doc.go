// Package auth is gpuwatch's one front door: bearer tokens with roles (read,
// agent, operate, admin), loaded from a token file that holds only the
// SHA-256 of each secret and is reloaded when it changes; the HTTP
// middleware every listener puts in front of its handlers, which answers 401
// and 403 and passes the caller's Identity on in the request context; and the
// client side (a RoundTripper that sends the secret from a file).
//
// Without a token file, reads are open and write and control calls are
// accepted from loopback only; Options.Insecure opens everything explicitly.
// Secrets never reach logs, errors or metrics: only a token's name does.
package auth
