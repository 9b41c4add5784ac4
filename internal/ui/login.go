package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gpuwatch/gpuwatch/internal/auth"
)

// loginView is the login page's data.
type loginView struct {
	Next    string
	Enabled bool
	TTL     string
}

// safeNext keeps a post-login destination on this server.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") ||
		strings.HasPrefix(next, LoginPath) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

func (u *UI) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	v := &loginView{Next: safeNext(r.URL.Query().Get("next")), Enabled: u.opts.Sessions.Enabled()}
	if v.Enabled {
		v.TTL = humanDuration(u.opts.Sessions.TTL())
	}
	u.render(w, r, http.StatusOK, "login", u.page(r, "Log in", "", v))
}

// handleLogin opens a session for a pasted token and sets its cookie. The
// front door has checked the form's Origin and (anonymous) CSRF token.
func (u *UI) handleLogin(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	sid, id, expires, err := u.opts.Sessions.Login(r.PostFormValue("token"))
	if err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, auth.ErrNoTokenFile) {
			status = http.StatusBadRequest
		}
		p := u.page(r, "Log in", "", &loginView{Next: next, Enabled: u.opts.Sessions.Enabled(), TTL: humanDuration(u.opts.Sessions.TTL())})
		p.Error = "Log in failed: " + err.Error() + "."
		u.render(w, r, status, "login", p)
		return
	}
	auth.SetSessionCookie(w, r, sid, expires)
	u.opts.Logger.Info("ui: login", "user", id.Name, "role", id.Role.String(), "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (u *UI) handleLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(auth.SessionCookie); err == nil {
		u.opts.Sessions.Logout(c.Value)
	}
	auth.ClearSessionCookie(w, r)
	http.Redirect(w, r, LoginPath, http.StatusSeeOther)
}
