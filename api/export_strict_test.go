package api

// InstallForgetfulRead makes list_sites a handler that never reads its query
// parameters and always answers 200, as a careless future read route would.
func InstallForgetfulRead(s *Server) {
	s.handlers["list_sites"] = func(s *Server, r *request) error {
		return r.writeJSON(200, map[string]any{"api_version": "1", "sites": []any{}, "page": map[string]any{"has_more": false, "next_cursor": nil}})
	}
	s.router = newRouter(s.routerOps(), s.handlers)
}
