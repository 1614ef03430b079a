package review

import (
	"testing"

	"siteenv/ledger/ledgertest"
)

// TestMain stops the package's throwaway PostgreSQL cluster when the tests
// end (without it every run left one running: TestTestMainsStopTheirClusters).
func TestMain(m *testing.M) { ledgertest.Main(m) }
