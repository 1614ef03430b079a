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
	a, ok := activityOf(r)
	if !ok {
		return
	}
	if r.audited == a.HTTPStatus {
		return // written with the stored idempotent response (queries.Service.Settle)
	}
	// The record must outlive a cancelled request context.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), requestTimeout)
	defer cancel()
	record := s.led.RecordActivity
	if r.op.Method == "GET" {
		// A read's record is queued and written in a batch behind the
		// response, with a relaxed commit; see ledger/activityqueue.go for
		// what a crash could lose. The records of writes stay durable
		// before the response.
		record = s.led.QueueReadActivity
	}
	if err := record(ctx, r.principal.AccountID, r.principal.IntegrationID, a); err != nil {
		s.log.Error("audit record lost", "request_id", r.id, "operation", r.op.ID, "err", err)
	}
}

// activityOf is the audit record of r as answered so far; false when r is
// not audited.
func activityOf(r *request) (ledger.Activity, bool) {
	if r.op == nil || r.op.Public || r.op.ID == "list_activity" || r.principal.IntegrationID == uuid.Nil {
		return ledger.Activity{}, false
	}
	return activityRecord(r), true
}

// activityRecord is the audit record of r's response as it stands (its
// principal is the caller's to know: the answered admission's is the admission's (queries)).
func activityRecord(r *request) ledger.Activity {
	status := r.http.Response.StatusCode()
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
	return a
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
