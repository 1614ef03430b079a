package api

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
	"siteenv/queries"
)

type receiptBody struct {
	ReceiptID      string        `json:"receipt_id"`
	IssuedAt       time.Time     `json:"issued_at"`
	CreditsCharged int64         `json:"credits_charged"`
	BalanceBefore  *int64        `json:"balance_before"`
	BalanceAfter   *int64        `json:"balance_after"`
	Lines          []receiptLine `json:"lines"`
}

// receiptLine is a receipt line as served: section_key is always present,
// null for a line that is not a section (a report).
type receiptLine struct {
	Description string  `json:"description"`
	SectionKey  *string `json:"section_key"`
	Credits     int64   `json:"credits"`
}

func receiptView(r *ledger.Receipt) *receiptBody {
	if r == nil {
		return nil
	}
	lines := make([]receiptLine, 0, len(r.Lines))
	for _, l := range r.Lines {
		v := receiptLine{Description: l.Description, Credits: l.Credits}
		if l.SectionKey != "" {
			v.SectionKey = ptr(l.SectionKey)
		}
		lines = append(lines, v)
	}
	return &receiptBody{ReceiptID: r.ID.String(), IssuedAt: r.IssuedAt.UTC(), CreditsCharged: r.CreditsCharged,
		BalanceBefore: &r.BalanceBefore, BalanceAfter: &r.BalanceAfter, Lines: lines}
}

type acquisitionBody struct {
	APIVersion                  string       `json:"api_version"`
	AcquisitionID               string       `json:"acquisition_id"`
	PurchaseID                  string       `json:"purchase_id"`
	SiteID                      string       `json:"site_id"`
	SectionKeys                 []string     `json:"section_keys"`
	ChargedSectionKeys          []string     `json:"charged_section_keys"`
	AlreadyAcquiredSectionKeys  []string     `json:"already_acquired_section_keys"`
	CreditsCharged              int64        `json:"credits_charged"`
	CreditBalance               int64        `json:"credit_balance"`
	IntegrationCreditsRemaining int64        `json:"integration_credits_remaining"`
	Receipt                     *receiptBody `json:"receipt"`
	CreatedAt                   time.Time    `json:"created_at"`
}

func (s *Server) createAcquisition(r *request) error {
	var req struct {
		SiteID      *string  `json:"site_id"`
		SectionKeys []string `json:"section_keys"`
	}
	if err := decodeBody(string(r.http.Request.Header.ContentType()), r.http.Request.Body(), &req); err != nil {
		return err
	}
	var fe []FieldError
	var siteID uuid.UUID
	if req.SiteID == nil {
		fe = append(fe, FieldError{Field: "site_id", Message: "required"})
	} else if id, err := parseUUID(*req.SiteID); err != nil {
		fe = append(fe, FieldError{Field: "site_id", Message: "must be a UUID"})
	} else {
		siteID = id
	}
	switch n := len(req.SectionKeys); {
	case req.SectionKeys == nil:
		fe = append(fe, FieldError{Field: "section_keys", Message: fmt.Sprintf("required: 1 to %d section keys", maxSectionsPerPurchase)})
	case n < 1 || n > maxSectionsPerPurchase:
		fe = append(fe, FieldError{Field: "section_keys", Message: fmt.Sprintf("must hold 1 to %d section keys", maxSectionsPerPurchase)})
	}
	seen := map[string]bool{}
	for i, k := range req.SectionKeys {
		switch {
		case !sectionKeyRE.MatchString(k):
			fe = append(fe, FieldError{Field: fmt.Sprintf("section_keys[%d]", i), Message: "must match ^[a-z0-9][a-z0-9_-]*$"})
		case seen[k]:
			fe = append(fe, FieldError{Field: fmt.Sprintf("section_keys[%d]", i), Message: "duplicate section"})
		}
		seen[k] = true
	}
	if len(fe) > 0 {
		return invalid("The acquisition request is invalid.", fe...)
	}
	// The logical purchase: the same site and set of sections in any order.
	sorted := slices.Clone(req.SectionKeys)
	slices.Sort(sorted)
	logical := struct {
		Site     uuid.UUID
		Sections []string
	}{siteID, sorted}
	key, _ := r.idempotencyKey()
	recheck := s.acquisitionReplayCheck(r, req.SectionKeys)
	return s.idempotent(r, logical, recheck, func() error {
		r.resourceType, r.resourceID = "site", siteID.String()
		start := s.clock.Now()
		p, err := s.led.Acquire(r.ctx, ledger.AcquireParams{
			Account: r.principal.AccountID, Integration: r.principal.IntegrationID, IdemKey: key,
			SiteID: siteID, Sections: req.SectionKeys, MaxSiteAreaM2: maxSiteAreaM2, Visible: sectionVisible(r),
		})
		if err != nil {
			return &placedError{err: err, place: atAcquisition, field: "site_id", items: req.SectionKeys}
		}
		if p.CreatedAt != nil && p.CreatedAt.Before(start) {
			// The purchase of an earlier request with the key, whose answer
			// was lost: checked as its replay would be, and not stored (its
			// buyer's retry still finds it).
			if err := recheck(ledger.IdemResponse{}); err != nil {
				return &queries.CallerRefusal{Err: err}
			}
		}
		r.resourceType, r.resourceID = "purchase", p.ID.String()
		already := []string{}
		for _, k := range p.SectionKeys {
			if !slices.Contains(p.ChargedSections, k) {
				already = append(already, k)
			}
		}
		return r.writeJSON(200, acquisitionBody{
			APIVersion: "1", AcquisitionID: p.ID.String(), PurchaseID: p.ID.String(), SiteID: siteID.String(),
			SectionKeys: p.SectionKeys, ChargedSectionKeys: p.ChargedSections, AlreadyAcquiredSectionKeys: already,
			CreditsCharged: p.CreditsCharged, CreditBalance: *p.BalanceAfter, IntegrationCreditsRemaining: p.IntegrationCreditsRemaining,
			Receipt: receiptView(p.Receipt), CreatedAt: p.CreatedAt.UTC(),
		})
	})
}

type purchaseSummary struct {
	PurchaseID      string     `json:"purchase_id"`
	Kind            string     `json:"kind"`
	SiteID          *string    `json:"site_id"`
	ReportID        *string    `json:"report_id"`
	SectionKeys     []string   `json:"section_keys"`
	CreditsCharged  int64      `json:"credits_charged"`
	CreditsRefunded *int64     `json:"credits_refunded"`
	RefundStatus    *string    `json:"refund_status"`
	BalanceAfter    *int64     `json:"balance_after"`
	CreatedAt       *time.Time `json:"created_at"`
	Limitations     []string   `json:"limitations"`
}

type purchaseBody struct {
	purchaseSummary
	Receipt *receiptBody `json:"receipt"`
}

func purchaseView(p ledger.Purchase) purchaseSummary {
	v := purchaseSummary{PurchaseID: p.ID.String(), Kind: p.Kind, SectionKeys: p.SectionKeys, CreditsCharged: p.CreditsCharged,
		CreditsRefunded: p.CreditsRefunded, RefundStatus: p.RefundStatus, BalanceAfter: p.BalanceAfter, Limitations: p.Limitations}
	if p.SiteID != nil {
		v.SiteID = ptr(p.SiteID.String())
	}
	if p.ReportID != nil {
		v.ReportID = ptr(p.ReportID.String())
	}
	if p.CreatedAt != nil {
		v.CreatedAt = ptr(p.CreatedAt.UTC())
	}
	return v
}

// purchasePosition continues newest-first purchase history, into the undated tail.
type purchasePosition struct {
	T       *time.Time `json:"t"`
	ID      uuid.UUID  `json:"i"`
	Undated bool       `json:"u"`
}

func (s *Server) listPurchases(r *request) error {
	q := r.query("cursor", "limit", "site_id", "kind", "created_from", "created_before")
	f := ledger.PurchaseFilter{
		SiteID:        q.uuid("site_id"),
		Kind:          q.enum("kind", "site_access", "report", "legacy_usage"),
		CreatedFrom:   q.time("created_from"),
		CreatedBefore: q.time("created_before"),
		Limit:         q.limit(historyPageDefault, historyPageMax),
	}
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	l := s.list(r, "purchases", binding(fmtUUID(f.SiteID), f.Kind, fmtTime(f.CreatedFrom), fmtTime(f.CreatedBefore)))
	var pos purchasePosition // the zero position: the start
	if err := l.resume(cur, &pos); err != nil {
		return err
	}
	f.AfterTime, f.AfterID, f.AfterUndated = pos.T, pos.ID, pos.Undated
	rows, err := s.led.ListPurchases(r.ctx, r.principal.AccountID, f)
	if err != nil {
		return err
	}
	rows, pg, err := pageOf(l, rows, f.Limit, func(p *ledger.Purchase) purchasePosition {
		return purchasePosition{T: p.CreatedAt, ID: p.ID, Undated: p.CreatedAt == nil}
	})
	if err != nil {
		return err
	}
	body := struct {
		APIVersion string            `json:"api_version"`
		Purchases  []purchaseSummary `json:"purchases"`
		Page       page              `json:"page"`
	}{APIVersion: "1", Purchases: []purchaseSummary{}, Page: pg}
	for _, p := range rows {
		body.Purchases = append(body.Purchases, purchaseView(p))
	}
	return r.writeJSON(200, body)
}

func (s *Server) getPurchase(r *request) error {
	id, err := r.pathUUID("purchase_id")
	if err != nil {
		return err
	}
	if err := r.query().err(); err != nil {
		return err
	}
	r.resourceType, r.resourceID = "purchase", id.String()
	p, err := s.led.Purchase(r.ctx, r.principal.AccountID, id)
	if err != nil {
		return err
	}
	return r.writeJSON(200, struct {
		APIVersion string       `json:"api_version"`
		Purchase   purchaseBody `json:"purchase"`
	}{"1", purchaseBody{purchaseView(p), receiptView(p.Receipt)}})
}
