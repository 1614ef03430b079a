package api_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"siteenv/api"
)

// A configuration is validated once, in New, and a bad value is named.
func TestConfigValidated(t *testing.T) {
	secret := bytes.Repeat([]byte("s"), 32)
	for _, tc := range []struct {
		cfg   api.Config
		field string
	}{
		{api.Config{}, "Secret"},
		{api.Config{Secret: secret[:31]}, "Secret"},
		{api.Config{Secret: secret, CursorTTL: -time.Second}, "CursorTTL"},
		{api.Config{Secret: secret, IdempotencyWait: -time.Second}, "IdempotencyWait"},
		{api.Config{Secret: secret, BodyReadTimeout: -time.Second}, "BodyReadTimeout"},
		{api.Config{Secret: secret, MapRenders: -1}, "MapRenders"},
	} {
		_, err := api.New(tc.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("config with a bad %s: err %v, want one naming it", tc.field, err)
		}
	}
	if _, err := api.New(api.Config{Secret: secret}, nil); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
}
