package api

import "siteenv/api/openapi"

// getOpenAPI serves the embedded machine-readable description; no key needed.
func (s *Server) getOpenAPI(r *request) error {
	r.http.SetStatusCode(200)
	r.http.SetContentType("application/json")
	r.http.SetBody(openapi.Document)
	r.etag = documentETag()
	return nil
}

// getDocs serves the API reference page built from the same document; no key
// needed.
func (s *Server) getDocs(r *request) error {
	r.http.SetStatusCode(200)
	r.http.SetContentType("text/html; charset=utf-8")
	r.http.SetBody(openapi.DocsPage)
	return nil
}
