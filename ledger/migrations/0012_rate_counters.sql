-- Rate-limit windows move from the rate_windows table to one UNLOGGED
-- sequence per account and bucket (schema rate). Counting a row of a table
-- made every authenticated read a write transaction: an xid, a commit
-- record and a WAL writer wake-up, about half of PostgreSQL's work for a
-- read. nextval and setval on an unlogged sequence take no xid and write
-- no WAL, so a counted read is a read-only statement. Every replica still
-- counts in the same sequence, so limits stay exact across replicas.
--
-- A counter's value is (window << 32) | hits: the window's index (its start
-- as a multiple of the window length since the Unix epoch, which the caller
-- passes from its clock) and the hits counted in it. Each counter is a
-- relation of its own: two 8 kB pages on disk (its page and its init fork).
--
-- A crash (or a failover to a standby) resets every unlogged sequence to
-- its start value, which reads as a finished window: each account's
-- current window restarts from zero, as the unlogged table's did (0009).
-- The windows current at the upgrade restart from zero too.
--
-- rate_windows stays for replicas of the previous version still serving
-- during a rolling upgrade: they go on counting there until they are
-- replaced (until then an account's limit is counted apart on old and new
-- replicas), where dropping it would fail their every request. This
-- version never reads it; a later migration can drop it.
CREATE SCHEMA rate;

-- rate_counter_name is the sequence's name (without its schema).
CREATE FUNCTION rate_counter_name(account uuid, bucket text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$ SELECT bucket || '_' || replace(account::text, '-', '') $$;

-- rate_counter is the account's counter of bucket, NULL until it is created.
CREATE FUNCTION rate_counter(account uuid, bucket text) RETURNS regclass
    LANGUAGE sql STABLE AS $$ SELECT to_regclass(format('rate.%I', rate_counter_name(account, bucket))) $$;

-- rate_counter_lock serialises the beginnings of a counter's windows (and
-- its creation) until the end of the caller's transaction. 1918989413 is
-- 'rate' in ASCII: the two-key advisory locks' own key space.
CREATE FUNCTION rate_counter_lock(account uuid, bucket text) RETURNS void
    LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock(1918989413, hashtext(rate_counter_name(account, bucket))) $$;

-- rate_counter_create creates account's counter of bucket unless it exists
-- and returns it. CACHE 1 (the default): every nextval reads the one shared
-- value. Accounts get their counters when they are created (CreateAccount);
-- rate_count creates one it finds missing (an account older than this
-- migration, a bucket added later).
CREATE FUNCTION rate_counter_create(account uuid, bucket text) RETURNS regclass LANGUAGE plpgsql AS $$
BEGIN
    PERFORM rate_counter_lock(account, bucket);
    EXECUTE format('CREATE UNLOGGED SEQUENCE IF NOT EXISTS rate.%I', rate_counter_name(account, bucket));
    RETURN rate_counter(account, bucket);
END $$;

-- rate_count counts one hit of account in bucket's window win and returns
-- the counter's value after it. In a window already begun it is one
-- nextval. The first count of a window begins it: under the counter's
-- lock, a fresh nextval tells whether another transaction has begun it
-- meanwhile (then this hit is that nextval's); otherwise setval starts it
-- at one hit. Hits that found a finished window incremented only that
-- finished window, and each counts itself again under the lock, so every
-- hit is counted once in the window it is answered with. A window never
-- moves back: a replica whose clock lags counts in the newer window another
-- replica began.
CREATE FUNCTION rate_count(account uuid, bucket text, win bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    seq regclass := rate_counter(account, bucket);
    v bigint;
BEGIN
    IF seq IS NOT NULL THEN
        v := nextval(seq);
        IF v >> 32 >= win THEN
            RETURN v;
        END IF;
        PERFORM rate_counter_lock(account, bucket);
    ELSE
        seq := rate_counter_create(account, bucket);
    END IF;
    v := nextval(seq);
    IF v >> 32 >= win THEN
        RETURN v;
    END IF;
    RETURN setval(seq, (win << 32) | 1);
END $$;

-- The accounts there are get their counters from their first counts, one
-- short transaction each: creating them all here would hold a lock on
-- every new sequence until this migration commits, beyond the lock table's
-- room once there are a few thousand accounts.
