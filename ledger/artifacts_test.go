package ledger_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

func newArtifact(t *testing.T, b bundle, account uuid.UUID, datasets []string) ledger.Artifact {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	a, err := b.led.CreateArtifact(b.ctx, ledger.ArtifactParams{ID: id, Account: account, Filename: "r.pdf", MediaType: ledger.MediaPDF,
		Size: 3, SHA256: strings.Repeat("ab", 32), StorageKey: "artifacts/" + account.String() + "/" + id.String() + "/r.pdf", DatasetIDs: datasets})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestArtifactsAndDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, err := b.led.CreateAccount(b.ctx, "A", 0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.led.CreateAccount(b.ctx, "B", 0)
	if err != nil {
		t.Fatal(err)
	}
	key, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{ledger.ScopeArtifactsRead}})
	if err != nil {
		t.Fatal(err)
	}
	a := newArtifact(t, b, acct.ID, []string{"z", "a", "z"})
	if strings.Join(a.DatasetIDs, ",") != "a,z" {
		t.Fatalf("dataset ids %v, want sorted and unique", a.DatasetIDs)
	}
	if got, err := b.led.Artifact(b.ctx, acct.ID, a.ID); err != nil || got.SHA256 != a.SHA256 || got.StorageKey != a.StorageKey {
		t.Fatalf("Artifact = %+v, %v", got, err)
	}
	if _, err := b.led.Artifact(b.ctx, other.ID, a.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("another account's artifact: %v", err)
	}
	legacy := newArtifact(t, b, acct.ID, nil)
	if got, _ := b.led.Artifact(b.ctx, acct.ID, legacy.ID); got.DatasetIDs != nil {
		t.Fatalf("unknown scope read back as %v", got.DatasetIDs)
	}

	// Refused artifacts.
	for name, p := range map[string]ledger.ArtifactParams{
		"slash":      {ID: uuid.New(), Account: acct.ID, Filename: "a/b", MediaType: ledger.MediaPDF, SHA256: a.SHA256, StorageKey: "k1"},
		"media":      {ID: uuid.New(), Account: acct.ID, Filename: "a", MediaType: "text/html", SHA256: a.SHA256, StorageKey: "k2"},
		"sha":        {ID: uuid.New(), Account: acct.ID, Filename: "a", MediaType: ledger.MediaPDF, SHA256: "AB", StorageKey: "k3"},
		"no account": {ID: uuid.New(), Filename: "a", MediaType: ledger.MediaPDF, SHA256: a.SHA256, StorageKey: "k4"},
	} {
		if _, err := b.led.CreateArtifact(b.ctx, p); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}

	d, err := b.led.MintDelivery(b.ctx, acct.ID, a.ID, key.KeyID, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !ledger.ValidCapability(d.Capability) || !strings.HasPrefix(d.Capability, "dl_"+d.ID.String()+".") {
		t.Fatalf("capability %q", d.Capability)
	}
	if !d.ExpiresAt.Equal(b.clock.Now().Add(5*time.Minute)) || d.SHA256 != a.SHA256 {
		t.Fatalf("delivery %+v", d)
	}
	// Only the hash is stored: the secret appears nowhere in the row.
	row, err := ledger.DeliveryRowForTest(b.ctx, b.led, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, _ := strings.Cut(d.Capability, ".")
	if strings.Contains(row, secret) || !strings.Contains(row, hex.EncodeToString(ledger.HashCapability(d.Capability))) {
		t.Fatalf("stored row %s", row)
	}
	got, err := b.led.Delivery(b.ctx, d.Capability)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != d.ID || got.Artifact.ID != a.ID || got.Minter.KeyID != key.KeyID || got.Minter.Revoked || got.Revoked {
		t.Fatalf("Delivery = %+v", got)
	}
	if _, err := b.led.Delivery(b.ctx, d.Capability[:len(d.Capability)-1]+"x"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("tampered capability: %v", err)
	}
	// The minting key's revocation is seen live.
	if err := b.led.RevokeKey(b.ctx, key.KeyID); err != nil {
		t.Fatal(err)
	}
	if got, err := b.led.Delivery(b.ctx, d.Capability); err != nil || !got.Minter.Revoked {
		t.Fatalf("after key revocation: %+v, %v", got.Minter, err)
	}
	if err := b.led.RevokeDelivery(b.ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.led.Delivery(b.ctx, d.Capability); !got.Revoked {
		t.Fatal("revoked delivery reads as live")
	}
	if err := b.led.RevokeDelivery(b.ctx, uuid.New()); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("revoking an unknown delivery: %v", err)
	}
	// No delivery of another account's artifact.
	if _, err := b.led.MintDelivery(b.ctx, other.ID, a.ID, key.KeyID, time.Minute); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("minting another account's artifact: %v", err)
	}
}

func TestPermitsScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		key, account []string
		datasets     []string
		want         bool
	}{
		{"unrestricted, known", nil, nil, []string{"a", "b"}, true},
		{"unrestricted, unknown scope", nil, nil, nil, true},
		{"key permits all", []string{"a", "b", "c"}, nil, []string{"a", "b"}, true},
		{"key permits some", []string{"a"}, nil, []string{"a", "b"}, false},
		{"key restricted, unknown scope", []string{"a", "b"}, nil, nil, false},
		{"empty restriction, no datasets", []string{}, nil, []string{}, true},
		{"account lacks one", nil, []string{"a"}, []string{"a", "b"}, false},
		{"account restricted, unknown scope", nil, []string{"a"}, nil, true},
	}
	for _, tc := range tests {
		p := ledger.Principal{KeyDatasets: tc.key, AccountDatasets: tc.account}
		if got := p.PermitsScope(tc.datasets); got != tc.want {
			t.Errorf("%s: PermitsScope = %v, want %v", tc.name, got, tc.want)
		}
	}
}
