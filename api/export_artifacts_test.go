package api

import (
	"log/slog"

	"siteenv/store"
)

// SetStore gives a test server its object store (artifacts live there).
func SetStore(s *Server, st store.Store) { s.store = st }

// SetLogger replaces a test server's logger (before HTTPServer is called).
func SetLogger(s *Server, l *slog.Logger) { s.log = l }

// RedactCapabilities exposes the log redaction for tests.
var RedactCapabilities = redactCapabilities

// ParseRange exposes the Range parser for fuzzing.
var ParseRange = parseRange
