// Package healthz adapts a health check such as coord.Elector.Healthy to
// net/http, for a host's health endpoint (the counterpart of client-go's
// leaderelection.HealthzAdaptor). It is a package of its own so that the
// core, and the C library built from it, do not link net/http.
package healthz

import (
	"net/http"
)

// Checker is anything with a health check: nil means healthy.
// *coord.Elector is one.
type Checker interface {
	Healthy() error
}

// Handler answers 200 "ok" while c is healthy and 503 with the reason
// otherwise (text/plain). GET and HEAD only (405 otherwise).
func Handler(c Checker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := c.Healthy(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}
