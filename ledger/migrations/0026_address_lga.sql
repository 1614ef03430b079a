-- The local government area of an address's locality (the addresses file's
-- optional lga column), printed on a report's cover. NULL: not held.
ALTER TABLE addresses ADD COLUMN lga text;
