package api

import "siteenv/api/openapi"

// getOpenAPI serves the embedded machine-readable description; no key needed.
func (s *Server) getOpenAPI(r *request) error {
	r.ctx.SetStatusCode(200)
	r.ctx.SetContentType("application/json")
	r.ctx.SetBody(openapi.Document)
	r.etag = documentETag()
	return nil
}
