package api

import (
	"math"
	"time"
)

// Limits are the contract's enforced ceilings, by the names GET /context
// reports. Enforcement reads these same values.
var Limits = map[string]int64{
	"json_request_bytes":             MaxRequestBody,
	"json_response_bytes":            1 << 20,
	"map_image_bytes":                12 << 20,
	"map_image_width_px":             1280,
	"map_image_height_px":            900,
	"layers_per_query":               10,
	"sections_per_purchase":          10,
	"geometry_vertices":              10_000,
	"selected_parcels":               200,
	"radius_max_m":                   10_000,
	"site_area_max_m2":               400_000,
	"list_page_default":              100,
	"list_page_max":                  500,
	"history_page_default":           20,
	"history_page_max":               100,
	"location_search_results":        10,
	"report_section_text_bytes":      8 << 10,
	"report_sections":                200,
	"report_text_bytes":              1 << 20,
	"query_features":                 100_000,
	"query_output_bytes":             50 << 20,
	"retained_result_bytes":          2 << 30,
	"reads_per_minute":               readsPerMinute,
	"query_admissions_per_minute":    queryAdmissionsPerMinute,
	"running_queries":                4,
	"queued_queries":                 100,
	"query_queue_seconds":            600,
	"query_attempt_seconds":          120,
	"query_result_retention_seconds": int64((24 * time.Hour) / time.Second),
	"delivery_link_seconds":          300,
	"artifact_bytes":                 100 << 20,
	"idempotency_key_max_length":     maxIdempotencyKey,
	"prefer_wait_max_seconds":        3,
	"field_errors_max":               maxFieldErrors,
	"cursor_max_length":              maxCursorLen,
}

const (
	readsPerMinute           = 120
	queryAdmissionsPerMinute = 30
	maxCursorLen             = 4096
)

// limitReads counts every authenticated GET against the account's read budget.
func (s *Server) limitReads(r *request) error {
	if string(r.ctx.Method()) != "GET" {
		return nil
	}
	return s.rateLimit(r, "reads", readsPerMinute)
}

// rateLimit counts one event in the account's per-minute bucket.
func (s *Server) rateLimit(r *request, bucket string, perMinute int) error {
	ok, wait, err := s.led.Hit(r.c, r.principal.AccountID, bucket, perMinute, time.Minute)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	return &Problem{Code: "rate_limited", Detail: "The account's " + bucket + " limit is exhausted; retry after the Retry-After seconds.",
		RetryAfter: int(math.Ceil(wait.Seconds()))}
}
