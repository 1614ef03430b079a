-- A query remembers the Idempotency-Key its admission claimed, so that a
-- retry that takes over the key's claim after the admitting process died
-- (its lease lapsed before it stored a response) answers with the query
-- that admission committed instead of admitting a second one
-- (ledger.QueryByIdemKey). NULL for queries admitted before this column,
-- and for answers stored with their admission (their claim is done with
-- the response: a retry replays it).
ALTER TABLE queries ADD COLUMN idem_key text;
CREATE INDEX queries_idem_key ON queries (integration_id, idem_key) WHERE idem_key IS NOT NULL;
