package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
)

type unreadableBasemap struct{}

func (unreadableBasemap) Layers(orb.Bound, int) ([]mvt.Layers, error) {
	return nil, errors.New("read tile 14/15071/9834: input/output error")
}
func (unreadableBasemap) Attribution() string { return "" }
func (unreadableBasemap) Version() string     { return "v" }

// TestBasemapReadErrorsAreLogged: a tile the archive cannot read is
// logged with its error, and the error still reaches the map (which says
// its basemap could not be read: report's TestBasemapNoteSaysWhy).
func TestBasemapReadErrorsAreLogged(t *testing.T) {
	var logs bytes.Buffer
	b := loggedBasemap{unreadableBasemap{}, slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := b.Layers(orb.Bound{}, 14); err == nil {
		t.Fatal("the read error was swallowed")
	}
	if !strings.Contains(logs.String(), "basemap tiles could not be read") || !strings.Contains(logs.String(), "input/output error") {
		t.Fatalf("log %q does not say the basemap could not be read and why", logs.String())
	}
}
