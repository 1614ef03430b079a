-- The credit ledger: every change of a balance is an entry; purchases with
-- their immutable receipts; legacy usage imported from the old system.

CREATE TABLE credit_entries (
    entry_id       uuid PRIMARY KEY,
    account_id     uuid NOT NULL REFERENCES accounts,
    kind           text NOT NULL CHECK (kind IN ('grant', 'debit', 'refund')),
    -- Signed: grants and refunds add, debits subtract.
    amount         bigint NOT NULL,
    balance_after  bigint NOT NULL CHECK (balance_after >= 0),
    purchase_id    uuid,
    created_at     timestamptz NOT NULL,
    CHECK ((kind = 'debit') = (amount < 0) OR amount = 0)
);
CREATE INDEX credit_entries_account ON credit_entries (account_id, created_at);

-- Opening balances of accounts created before the ledger kept entries.
INSERT INTO credit_entries (entry_id, account_id, kind, amount, balance_after, created_at)
SELECT gen_random_uuid(), account_id, 'grant', credit_balance, credit_balance, created_at
FROM accounts WHERE credit_balance > 0;

CREATE TABLE purchases (
    purchase_id      uuid PRIMARY KEY,
    account_id       uuid NOT NULL REFERENCES accounts,
    integration_id   uuid REFERENCES integrations,
    -- The Idempotency-Key the purchase was made with: a retry finds it here
    -- even when the first response was never stored.
    idem_key         text,
    kind             text NOT NULL CHECK (kind IN ('site_access', 'report', 'legacy_usage')),
    site_id          uuid,
    report_id        uuid,
    section_keys     text[] NOT NULL DEFAULT '{}',
    charged_sections text[] NOT NULL DEFAULT '{}',
    credits_charged  bigint NOT NULL CHECK (credits_charged >= 0),
    credits_refunded bigint CHECK (credits_refunded >= 0),
    refund_status    text CHECK (refund_status IN ('none', 'partial', 'full')),
    balance_before   bigint,
    balance_after    bigint,
    legacy_id        text UNIQUE,
    limitations      text[] NOT NULL DEFAULT '{}',
    created_at       timestamptz,
    UNIQUE (integration_id, idem_key)
);
CREATE INDEX purchases_history ON purchases (account_id, created_at DESC NULLS LAST, purchase_id DESC);

CREATE TABLE receipts (
    receipt_id     uuid PRIMARY KEY,
    purchase_id    uuid NOT NULL UNIQUE REFERENCES purchases,
    issued_at      timestamptz NOT NULL,
    credits_charged bigint NOT NULL CHECK (credits_charged >= 0),
    balance_before bigint NOT NULL CHECK (balance_before >= 0),
    balance_after  bigint NOT NULL CHECK (balance_after >= 0),
    lines          jsonb NOT NULL
);

ALTER TABLE section_grants ADD CONSTRAINT section_grants_purchase FOREIGN KEY (purchase_id) REFERENCES purchases;
