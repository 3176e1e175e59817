-- Abuse defence: a per-sale human check (Turnstile) and the deny rules an operator keeps.

-- 1: checkout (and the queue join) of this sale ask for a Turnstile token in Human-Check.
ALTER TABLE sales ADD COLUMN human_check INTEGER NOT NULL DEFAULT 0 CHECK (human_check IN (0, 1));

-- Callers refused quietly: by client address, user id or user agent. Expired rules stay until
-- deleted but no longer match.
CREATE TABLE deny_rules (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  kind       TEXT NOT NULL CHECK (kind IN ('ip', 'user', 'user-agent')),
  value      TEXT NOT NULL,
  note       TEXT NOT NULL DEFAULT '',
  expires_at INTEGER,
  created_at INTEGER NOT NULL,
  UNIQUE (kind, value)
);
