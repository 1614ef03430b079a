package api

import (
	"context"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// audit records the outcome of every authenticated operation: operation id,
// outcome, request id, status and the resource touched; never keys, tokens,
// raw inputs or results. Reads of the activity feed itself are not recorded.
func (s *Server) audit(r *request) {
	if r.op == nil || r.op.Public || r.op.ID == "list_activity" || r.principal.IntegrationID == uuid.Nil {
		return
	}
	status := r.ctx.Response.StatusCode()
	a := ledger.Activity{
		Operation:  r.op.ID,
		Outcome:    outcome(status, r.problemCode),
		HTTPStatus: status,
	}
	a.RequestID, _ = uuid.Parse(r.id)
	if r.problemCode != "" {
		a.ErrorCode = &r.problemCode
	}
	if r.resourceType != "" {
		a.ResourceType, a.ResourceID = &r.resourceType, &r.resourceID
	}
	// The record must outlive a cancelled request context.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.c), requestTimeout)
	defer cancel()
	record := s.led.RecordActivity
	if r.op.Method == "GET" {
		// Reads trade the durability of their own record for speed; see
		// ledger/relaxed.go for what a crash could lose.
		record = s.led.RecordReadActivity
	}
	if err := record(ctx, r.principal.AccountID, r.principal.IntegrationID, a); err != nil {
		s.log.Error("audit record lost", "request_id", r.id, "operation", r.op.ID, "err", err)
	}
}

// outcome classifies a response for the activity feed.
func outcome(status int, code string) string {
	switch code {
	case "":
	case "credential_revoked":
		return "revoked"
	case "scope_insufficient", "access_required", "insufficient_credits", "credit_ceiling_exceeded",
		"rate_limited", "capacity_exceeded", "feature_disabled", "source_rights_restricted":
		return "denied"
	default:
		return "failed"
	}
	if status == 202 {
		return "accepted"
	}
	return "completed"
}
