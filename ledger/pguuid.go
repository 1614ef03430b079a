package ledger

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgx knows uuid.UUID only as a driver.Valuer and sql.Scanner: every uuid
// argument went through its string form, a failed binary encode (an error
// value built and discarded) and a text parse, and every uuid column back
// through text. registerUUID teaches a connection's type map to pass
// uuid.UUID as the 16 bytes it is, both ways (as pgx-google-uuid does).

// pgUUID is uuid.UUID with pgx's UUID interfaces.
type pgUUID uuid.UUID

func (u pgUUID) UUIDValue() (pgtype.UUID, error) { return pgtype.UUID{Bytes: u, Valid: true}, nil }

// ScanUUID leaves u as it was for NULL, as uuid.UUID's own Scan does.
func (u *pgUUID) ScanUUID(v pgtype.UUID) error {
	if !v.Valid {
		return nil
	}
	*u = v.Bytes
	return nil
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgUUID(value.(uuid.UUID)), buf)
}

type uuidScanPlan struct{ next pgtype.ScanPlan }

func (p *uuidScanPlan) SetNext(next pgtype.ScanPlan) { p.next = next }

func (p *uuidScanPlan) Scan(src []byte, dst any) error {
	return p.next.Scan(src, (*pgUUID)(dst.(*uuid.UUID)))
}

func tryWrapUUIDEncode(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if u, ok := value.(uuid.UUID); ok {
		return &uuidEncodePlan{}, pgUUID(u), true
	}
	return nil, nil, false
}

func tryWrapUUIDScan(target any) (pgtype.WrappedScanPlanNextSetter, any, bool) {
	if u, ok := target.(*uuid.UUID); ok {
		return &uuidScanPlan{}, (*pgUUID)(u), true
	}
	return nil, nil, false
}

// registerUUID installs the uuid.UUID plans in m ahead of pgx's own.
func registerUUID(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapUUIDEncode}, m.TryWrapEncodePlanFuncs...)
	m.TryWrapScanPlanFuncs = append([]pgtype.TryWrapScanPlanFunc{tryWrapUUIDScan}, m.TryWrapScanPlanFuncs...)
}
