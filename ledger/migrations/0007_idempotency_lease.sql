-- Idempotency claims held by a lease: the claiming process renews lease_until
-- while its request runs, so a claim whose process died is taken over as soon
-- as the lease lapses (ledger/idempotency.go). claim_token identifies the one
-- holder allowed to complete or release the claim.
ALTER TABLE idempotency
    ADD COLUMN claim_token uuid,
    ADD COLUMN lease_until timestamptz;
