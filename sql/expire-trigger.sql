-- tileserver-ts: tell a running server which area of a table changed (docs/live-data.md, "From PostgreSQL").
-- Install once per database (psql -f sql/expire-trigger.sql), then once per table:
--   SELECT tileserver_expire_install('public.roads', 'tile_expiry');            -- geometry column "geom"
--   SELECT tileserver_expire_install('public.roads', 'tile_expiry', 'way');     -- another geometry column
-- where 'tile_expiry' is the server's [postgres] expire_channel. Each INSERT, UPDATE or DELETE statement then
-- sends NOTIFY {"table": "schema.name", "bbox": [w, s, e, n]} (EPSG:4326) payloads covering the old and the new
-- geometries of the rows it touched, when its transaction commits: one per group of nearby rows, at most 64 (then
-- one box around all); TRUNCATE sends the whole world. Statement-level triggers with transition tables: a few
-- notifications per statement, whatever its row count, each far below PostgreSQL's 8000-byte limit.
-- PostgreSQL 10 or later, PostGIS.

-- The boxes of the changed rows. TG_ARGV[0]: the channel; TG_ARGV[1]: the geometry column. The transition tables
-- are named old_rows and new_rows by tileserver_expire_install; which exist depends on the event.
-- Rows are grouped by the 0.01-degree cell (about a kilometre, a zoom-15 tile) their box starts in, and each
-- group sends the box of its rows: an UPDATE of a few rows spread over a city expires a few small areas, not
-- the box around all of them. Past 64 groups the statement sends one box around everything (a bulk change).
CREATE OR REPLACE FUNCTION tileserver_expire_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  rows_sql text;
  boxes box2d[];
  b box2d;
  g text := quote_ident(TG_ARGV[1]);
  tbl text := TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- No transition table exists for TRUNCATE: every tile of the table is stale.
    PERFORM pg_notify(TG_ARGV[0], json_build_object('table', tbl, 'bbox', json_build_array(-180, -90, 180, 90))::text);
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    rows_sql := format('SELECT %s AS geom FROM new_rows', g);
  ELSIF TG_OP = 'DELETE' THEN
    rows_sql := format('SELECT %s AS geom FROM old_rows', g);
  ELSE
    -- An UPDATE: where the rows were and where they are now (an attribute change alone gives the same box twice).
    rows_sql := format('SELECT %s AS geom FROM old_rows UNION ALL SELECT %s FROM new_rows', g, g);
  END IF;
  EXECUTE format(
    'SELECT array_agg(box) FROM (SELECT ST_Extent(geom) AS box FROM (SELECT ST_Transform(geom, 4326) AS geom FROM (%s) AS r
       WHERE geom IS NOT NULL AND NOT ST_IsEmpty(geom)) AS changed
     GROUP BY floor(ST_XMin(geom) / 0.01), floor(ST_YMin(geom) / 0.01)) AS cells', rows_sql) INTO boxes;
  -- A statement that touched no row, or only rows without geometry, changed no tile.
  IF boxes IS NULL THEN
    RETURN NULL;
  END IF;
  IF array_length(boxes, 1) > 64 THEN
    SELECT ST_Extent(x) INTO b FROM unnest(boxes) AS x;
    boxes := ARRAY[b];
  END IF;
  FOREACH b IN ARRAY boxes LOOP
    PERFORM pg_notify(TG_ARGV[0], json_build_object('table', tbl, 'bbox', json_build_array(ST_XMin(b), ST_YMin(b), ST_XMax(b), ST_YMax(b)))::text);
  END LOOP;
  RETURN NULL;
END
$$;

-- Removes the triggers tileserver_expire_install made on a table.
CREATE OR REPLACE FUNCTION tileserver_expire_uninstall(tbl regclass) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP TRIGGER IF EXISTS tileserver_expire_insert ON %s', tbl);
  EXECUTE format('DROP TRIGGER IF EXISTS tileserver_expire_update ON %s', tbl);
  EXECUTE format('DROP TRIGGER IF EXISTS tileserver_expire_delete ON %s', tbl);
  EXECUTE format('DROP TRIGGER IF EXISTS tileserver_expire_truncate ON %s', tbl);
END
$$;

-- Installs (or replaces) the four triggers of a table. A trigger with transition tables fires for one event
-- only, so INSERT, UPDATE and DELETE each have their own; TRUNCATE has none.
CREATE OR REPLACE FUNCTION tileserver_expire_install(tbl regclass, channel text, geom_column text DEFAULT 'geom') RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tileserver_expire_uninstall(tbl);
  EXECUTE format('CREATE TRIGGER tileserver_expire_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tileserver_expire_notify(%L, %L)', tbl, channel, geom_column);
  EXECUTE format('CREATE TRIGGER tileserver_expire_update AFTER UPDATE ON %s REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tileserver_expire_notify(%L, %L)', tbl, channel, geom_column);
  EXECUTE format('CREATE TRIGGER tileserver_expire_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tileserver_expire_notify(%L, %L)', tbl, channel, geom_column);
  EXECUTE format('CREATE TRIGGER tileserver_expire_truncate AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION tileserver_expire_notify(%L, %L)', tbl, channel, geom_column);
END
$$;

-- For an osm2pgsql flex expire table (osm2pgsql.define_expire_output{table = ...}: columns zoom, x, y):
--   SELECT tileserver_expire_tiles_install('public.roads_tiles', 'tile_expiry', 'roads');
-- sends {"source": "roads", "tiles": ["z/x/y", ...]} for the rows each statement writes there, in as many
-- notifications as needed to keep each under 8000 bytes. TG_ARGV[0]: the channel; TG_ARGV[1]: the source id.
CREATE OR REPLACE FUNCTION tileserver_expire_tiles_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  head text := json_build_object('source', TG_ARGV[1])::text;
  chunk text := '';
  tile text;
BEGIN
  -- head is {"source" : "id"}: its closing brace is replaced by the tiles member.
  head := left(head, length(head) - 1) || ', "tiles": [';
  FOR tile IN SELECT to_json(zoom || '/' || x || '/' || y)::text FROM new_rows LOOP
    -- 7900 bytes: room for the head (a source id is short) within the 8000-byte limit.
    IF octet_length(head) + octet_length(chunk) + octet_length(tile) + 3 > 7900 THEN
      PERFORM pg_notify(TG_ARGV[0], head || chunk || ']}');
      chunk := '';
    END IF;
    chunk := chunk || CASE WHEN chunk = '' THEN '' ELSE ',' END || tile;
  END LOOP;
  IF chunk <> '' THEN
    PERFORM pg_notify(TG_ARGV[0], head || chunk || ']}');
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tileserver_expire_tiles_install(tbl regclass, channel text, source text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP TRIGGER IF EXISTS tileserver_expire_tiles_insert ON %s', tbl);
  EXECUTE format('DROP TRIGGER IF EXISTS tileserver_expire_tiles_update ON %s', tbl);
  EXECUTE format('CREATE TRIGGER tileserver_expire_tiles_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tileserver_expire_tiles_notify(%L, %L)', tbl, channel, source);
  -- osm2pgsql may write a tile already in the table again (INSERT ... ON CONFLICT DO UPDATE): an update.
  EXECUTE format('CREATE TRIGGER tileserver_expire_tiles_update AFTER UPDATE ON %s REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tileserver_expire_tiles_notify(%L, %L)', tbl, channel, source);
END
$$;
