package api

import "time"

type usageBody struct {
	APIVersion string       `json:"api_version"`
	Credits    usageCredits `json:"credits"`
	Queries    usageQueries `json:"queries"`
}

type usageCredits struct {
	AccountBalance       int64 `json:"account_balance"`
	IntegrationLimit     int64 `json:"integration_limit"`
	IntegrationUsed      int64 `json:"integration_used"`
	IntegrationRemaining int64 `json:"integration_remaining"`
}

type usageQueries struct {
	RetainedResultBytes      int64      `json:"retained_result_bytes"`
	RetainedResultLimitBytes int64      `json:"retained_result_limit_bytes"`
	Queued                   int64      `json:"queued"`
	QueuedLimit              int64      `json:"queued_limit"`
	Running                  int64      `json:"running"`
	RunningLimit             int64      `json:"running_limit"`
	NextResultExpiry         *time.Time `json:"next_result_expiry"`
}

func (s *Server) getUsage(r *request) error {
	if err := r.query().err(); err != nil {
		return err
	}
	acct, err := s.led.Account(r.ctx, r.principal.AccountID)
	if err != nil {
		return err
	}
	integ, err := s.led.Integration(r.ctx, r.principal.IntegrationID)
	if err != nil {
		return err
	}
	qu, err := s.led.QueryUsage(r.ctx, r.principal.AccountID)
	if err != nil {
		return err
	}
	return r.writeJSON(200, usageBody{
		APIVersion: "1",
		Credits: usageCredits{
			AccountBalance:       acct.CreditBalance,
			IntegrationLimit:     integ.SpendLimit,
			IntegrationUsed:      integ.CreditsUsed,
			IntegrationRemaining: max(0, integ.SpendLimit-integ.CreditsUsed),
		},
		Queries: usageQueries{
			RetainedResultBytes:      qu.RetainedBytes,
			RetainedResultLimitBytes: maxRetainedResultBytes,
			Queued:                   qu.Queued,
			QueuedLimit:              maxQueuedQueries,
			Running:                  qu.Running,
			RunningLimit:             s.limits()["max_running_queries"],
			NextResultExpiry:         utc(qu.NextResultExpiry),
		},
	})
}
