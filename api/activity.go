package api

import (
	"regexp"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

var operationRE = regexp.MustCompile(`^[a-z][a-z0-9_.:-]{0,79}$`)

type activityItem struct {
	ActivityID   string    `json:"activity_id"`
	Operation    string    `json:"operation"`
	Outcome      string    `json:"outcome"`
	RequestID    string    `json:"request_id"`
	CreatedAt    time.Time `json:"created_at"`
	HTTPStatus   int       `json:"http_status"`
	ErrorCode    *string   `json:"error_code"`
	ResourceType *string   `json:"resource_type"`
	ResourceID   *string   `json:"resource_id"`
}

type page struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

type activityBody struct {
	APIVersion string         `json:"api_version"`
	Activity   []activityItem `json:"activity"`
	Page       page           `json:"page"`
}

// timeIDPosition is a keyset position for lists ordered by (created_at, id).
type timeIDPosition struct {
	T  time.Time `json:"t"`
	ID uuid.UUID `json:"i"`
}

// after is where the list goes on: nil at its start (the zero position).
func (p *timeIDPosition) after() (*time.Time, uuid.UUID) {
	if p.ID == uuid.Nil {
		return nil, uuid.Nil
	}
	return &p.T, p.ID
}

func (s *Server) listActivity(r *request) error {
	q := r.query("cursor", "limit", "operation", "outcome", "request_id", "created_from", "created_before")
	f := ledger.ActivityFilter{
		Operation:     q.str("operation", 1, 80, operationRE),
		Outcome:       q.enum("outcome", "accepted", "denied", "completed", "failed", "revoked"),
		RequestID:     q.uuid("request_id"),
		CreatedFrom:   q.time("created_from"),
		CreatedBefore: q.time("created_before"),
		Limit:         q.limit(historyPageDefault, historyPageMax),
	}
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	l := s.list(r, "activity:"+r.principal.IntegrationID.String(), binding(f.Operation, f.Outcome, fmtUUID(f.RequestID), fmtTime(f.CreatedFrom), fmtTime(f.CreatedBefore)))
	var pos timeIDPosition
	if err := l.resume(cur, &pos); err != nil {
		return err
	}
	f.AfterTime, f.AfterID = pos.after()
	rows, err := s.led.ListActivity(r.ctx, r.principal.IntegrationID, f)
	if err != nil {
		return err
	}
	rows, pg, err := pageOf(l, rows, f.Limit, func(a *ledger.Activity) timeIDPosition { return timeIDPosition{T: a.CreatedAt, ID: a.ID} })
	if err != nil {
		return err
	}
	body := activityBody{APIVersion: "1", Activity: []activityItem{}, Page: pg}
	for _, a := range rows {
		// Dataset restrictions are rechecked on every page: records about a
		// layer the key may no longer use are left out.
		if a.ResourceType != nil && *a.ResourceType == "layer" && a.ResourceID != nil && !r.principal.PermitsDataset(*a.ResourceID) {
			continue
		}
		body.Activity = append(body.Activity, activityItem{
			ActivityID: a.ID.String(), Operation: a.Operation, Outcome: a.Outcome, RequestID: a.RequestID.String(),
			CreatedAt: a.CreatedAt.UTC(), HTTPStatus: a.HTTPStatus, ErrorCode: a.ErrorCode,
			ResourceType: a.ResourceType, ResourceID: a.ResourceID,
		})
	}
	return r.writeJSON(200, body)
}

func fmtUUID(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
