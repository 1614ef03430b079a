package api

import "log/slog"

// SetLogger replaces the server's logger (access log and errors).
func SetLogger(s *Server, l *slog.Logger) { s.log = l }
