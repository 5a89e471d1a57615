-- The durable state of the exchange. The server applies this file at start-up (every
-- statement is idempotent) and keeps its in-memory engine in step with these tables.
-- Money and shares are NUMERIC: exact decimals, never floating point.
--
-- The server is the only writer, and its engine checks every reference before a row is
-- written, so there are no foreign keys: their triggers ran one lookup per inserted row and
-- cost more PostgreSQL CPU than the inserts themselves. For the same reason the only indexes
-- are the primary keys: an order's executions are found through the ids its row lists
-- (orders.execution_ids), not through indexes on executions' order columns, whose entries
-- cost more per execution than the row itself (docs/PERFORMANCE.md, "Per-order CPU budget").
-- The CHECK constraints stay: they are cheap and catch a bug before it is durable.

-- Columns added since a table was first made are added only where they are missing: ALTER
-- TABLE ... ADD COLUMN IF NOT EXISTS takes the table's ACCESS EXCLUSIVE lock even when the
-- column is there, and a server starting beside a paused one (whose projection write or
-- journal append in flight holds its locks) would wait on it at every start.
CREATE OR REPLACE FUNCTION pg_temp.add_column_once(tab regclass, col name, def text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_attribute
                 WHERE attrelid = tab AND attname = col AND NOT attisdropped) THEN
    EXECUTE format('ALTER TABLE %s ADD COLUMN %I %s', tab, col, def);
  END IF;
END $$;
-- The same for a NOT NULL that a column has lost since: ALTER COLUMN ... DROP NOT NULL takes
-- ACCESS EXCLUSIVE even when the column is nullable already, so it runs only when it is not.
CREATE OR REPLACE FUNCTION pg_temp.drop_not_null_once(tab regclass, col name)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM pg_attribute
             WHERE attrelid = tab AND attname = col AND attnotnull AND NOT attisdropped) THEN
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP NOT NULL', tab, col);
  END IF;
END $$;

CREATE TABLE IF NOT EXISTS accounts (
  id        TEXT PRIMARY KEY CHECK (id ~ '^[0-9]+$'),
  balance   NUMERIC NOT NULL CHECK (balance >= 0),    -- cash not reserved by open buys
  deposited NUMERIC NOT NULL CHECK (deposited >= 0)   -- cash the account was created with
);

CREATE TABLE IF NOT EXISTS symbols (
  sym TEXT PRIMARY KEY CHECK (sym ~ '^[A-Za-z0-9]+$')
);

CREATE TABLE IF NOT EXISTS positions (
  account_id TEXT NOT NULL,
  symbol     TEXT NOT NULL,
  amount     NUMERIC NOT NULL CHECK (amount >= 0),    -- shares not reserved by open sells
  granted    NUMERIC NOT NULL CHECK (granted >= 0),   -- shares ever created by <create>
  PRIMARY KEY (account_id, symbol)
);
-- Each projection write updates most positions again (every half second under load). With half
-- of each page free, the new version of a row fits on its page (a HOT update, no new entry in
-- the primary key, which is text): measured, 45 % of these updates were HOT at the default 100,
-- all of them at 50. The table is small (a row per account and symbol held).
ALTER TABLE positions SET (fillfactor = 50);

-- Order ids are assigned by the server in arrival order and never reused: at start-up it
-- continues after the largest stored id (an id is only ever shown once its row committed).
CREATE TABLE IF NOT EXISTS orders (
  id          BIGINT PRIMARY KEY,
  account_id  TEXT NOT NULL,
  symbol      TEXT NOT NULL,
  -- As placed, or as a <replace> set it (executed + new open): > 0 buys, < 0 sells. So
  -- open_amount <= abs(amount) holds after a replace too.
  amount      NUMERIC NOT NULL CHECK (amount <> 0),
  limit_price NUMERIC CHECK (limit_price > 0),        -- NULL: a market order
  open_amount NUMERIC NOT NULL CHECK (open_amount >= 0 AND open_amount <= abs(amount)),
  created_at  BIGINT NOT NULL,                        -- seconds since the Unix epoch
  canceled_at BIGINT,                                 -- set: open_amount was canceled
  execution_ids BIGINT[] NOT NULL DEFAULT '{}',       -- its fills: executions.id, oldest first
  -- Time priority within its price level, the smaller first: a new order's is above every
  -- earlier one's, a <replace> that loses priority and a stop's trigger give a new one. NULL
  -- (a row from before priorities were stored): the order's id.
  priority    BIGINT,
  stop_price  NUMERIC CHECK (stop_price > 0)          -- set while a stop-limit order waits
);
-- Databases from before execution_ids get the column here, filled in below.
SELECT pg_temp.add_column_once('orders', 'execution_ids', $$BIGINT[] NOT NULL DEFAULT '{}'$$);
-- Databases from before the order types of issue 48 (PROTOCOL.md sections 4.5-4.8): market
-- orders have no limit, and priorities and stops are stored.
SELECT pg_temp.drop_not_null_once('orders', 'limit_price');
SELECT pg_temp.add_column_once('orders', 'priority', 'BIGINT');
SELECT pg_temp.add_column_once('orders', 'stop_price', 'NUMERIC CHECK (stop_price > 0)');

-- Room on each page for the new version of a row: an order's open amount changes when it fills
-- after resting, and an update that fits on the same page (HOT) adds no index entry, which is
-- most of the projector's cost of such an update.
ALTER TABLE orders SET (fillfactor = 80);

CREATE TABLE IF NOT EXISTS executions (
  id          BIGINT PRIMARY KEY,
  buy_order   BIGINT NOT NULL,
  sell_order  BIGINT NOT NULL,
  shares      NUMERIC NOT NULL CHECK (shares > 0),
  price       NUMERIC NOT NULL CHECK (price > 0),
  executed_at BIGINT NOT NULL
);
-- An order's executions: SELECT * FROM executions WHERE id = ANY(
--   (SELECT execution_ids FROM orders WHERE id = 42)) (primary-key lookups). A database from
-- before orders.execution_ids had an index on each order column instead: the ids are filled
-- in from them once, and they are dropped.
DO $$
BEGIN
  IF to_regclass('executions_by_buy_order') IS NOT NULL THEN
    UPDATE orders o SET execution_ids = f.ids
    FROM (SELECT order_id, array_agg(id ORDER BY id) AS ids
          FROM (SELECT buy_order AS order_id, id FROM executions
                UNION ALL SELECT sell_order, id FROM executions) sides
          GROUP BY order_id) f
    WHERE o.id = f.order_id;
    DROP INDEX executions_by_buy_order;
    DROP INDEX IF EXISTS executions_by_sell_order;
  END IF;
END $$;

-- The durable record: one row per accepted request that changed something, in engine order.
-- Replaying `request` (the payload as received) at time `at` into the state of the tables
-- above as of projection_position.seq rebuilds the engine exactly; `first_order_id` is the
-- id the engine was about to assign, a cheap check that the replay follows the live run.
-- A reply leaves only once its journal row has committed.
CREATE TABLE IF NOT EXISTS journal (
  seq            BIGINT PRIMARY KEY,
  at             BIGINT NOT NULL,        -- the server's clock for the request, Unix seconds
  first_order_id BIGINT NOT NULL,
  request        TEXT NOT NULL
);
-- The children of `request` the live server refused by a limit (--max-accounts and the like),
-- as "3,17"; NULL when none. A replay refuses exactly these, whatever the limits are then.
SELECT pg_temp.add_column_once('journal', 'refused', 'TEXT');
-- The last row of each group commit's batch carries its mark (NULL on the batch's other rows):
-- `writer`, a random number per server process, and `batch`, that process's count of batches.
-- When the connection breaks during a commit the server looks for the row (the batch's last
-- seq with its mark) instead of telling clients "not applied" about something that was. The
-- mark used to be a one-row table, commit_marker, updated by every commit: while a projection
-- write (a transaction of up to half a second) held back PostgreSQL's cleanup horizon, each
-- update left a row version that every later commit read again (the table grew by about five
-- pages a second under load, and the commits slowed with it).
SELECT pg_temp.add_column_once('journal', 'writer', 'BIGINT');
SELECT pg_temp.add_column_once('journal', 'batch', 'BIGINT');
DROP TABLE IF EXISTS commit_marker;

-- One row: which server may write this database. A server takes the writer lock (a session
-- advisory lock, held for the process's life) and then bumps `epoch` once, before it loads the
-- state. Every journal append checks, in the same statement and under a FOR SHARE lock of this
-- row, that `epoch` is still its own: a bump waits for an append in flight and an append after
-- a bump writes nothing, so a server that lost the lock to another (fenced) can never add to
-- the journal behind the new writer's back (the projection's fence is projection_position's
-- `epoch`, below, set by the same bump).
CREATE TABLE IF NOT EXISTS writer_epoch (
  singleton BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
  epoch     BIGINT NOT NULL,
  holder    TEXT NOT NULL,         -- who bumped it: program, pid, host, lock backend
  since     TIMESTAMPTZ NOT NULL
);
INSERT INTO writer_epoch (epoch, holder, since) VALUES (0, 'nobody yet', now())
  ON CONFLICT DO NOTHING;

-- One row: the lease of the writer in charge (store/writer_lock.hpp). The server that bumps
-- writer_epoch sets `epoch` and `lock_pid` (its writer lock's backend) in the same transaction
-- and renews `expires_at` every third of its lease. A standby (exchange-server --standby)
-- ends that lock session once `expires_at` has passed by PostgreSQL's clock, and so takes
-- over from a server that is alive to PostgreSQL but no longer working (paused, frozen).
CREATE TABLE IF NOT EXISTS writer_lease (
  singleton  BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
  epoch      BIGINT NOT NULL,        -- the writer_epoch it covers
  holder     TEXT NOT NULL,
  lock_pid   INTEGER NOT NULL,       -- the backend holding the writer lock
  renewed_at TIMESTAMPTZ NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
INSERT INTO writer_lease (epoch, holder, lock_pid, renewed_at, expires_at)
  VALUES (0, 'nobody yet', 0, now(), now()) ON CONFLICT DO NOTHING;

-- One row: the last journal seq whose effects accounts, positions, orders and executions
-- hold. The projector moves it in the same transaction as it writes those tables, off the
-- reply path. `epoch` is the projection's fence: the writer_epoch bump sets it in its own
-- statement, and a projection write takes this row FOR UPDATE where `epoch` is its own in its
-- first statement and keeps it to its commit, so a bump waits for (or ends) a write in flight
-- and a write after a bump finds no row and writes nothing. Its own row, not writer_epoch's,
-- because a write holds it for up to half a second and every journal append takes
-- writer_epoch FOR SHARE: two lockers of one row make a MultiXact on every append.
CREATE TABLE IF NOT EXISTS projection_position (
  singleton BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
  seq       BIGINT NOT NULL
);
SELECT pg_temp.add_column_once('projection_position', 'epoch', 'BIGINT NOT NULL DEFAULT 0');
-- The engine's next time priority as of `seq` (orders.priority; Effects::next_priority): a load
-- continues the count where the live run was. 0: none stored yet (the order ids bound it then).
SELECT pg_temp.add_column_once('projection_position', 'next_priority', 'BIGINT NOT NULL DEFAULT 0');
INSERT INTO projection_position (seq) VALUES (0) ON CONFLICT DO NOTHING;
