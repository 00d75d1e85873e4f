-- tileserver-ts: tell a running server which area of a table changed (docs/live-data.md, "From PostgreSQL").
-- Install once per database (psql -f sql/expire-trigger.sql), then once per table:
--   SELECT tileserver_expire_install('public.roads', 'tile_expiry');            -- geometry column "geom"
--   SELECT tileserver_expire_install('public.roads', 'tile_expiry', 'way');     -- another geometry column
-- where 'tile_expiry' is the server's [postgres] expire_channel. Each INSERT, UPDATE or DELETE statement then
-- sends one NOTIFY {"table": "schema.name", "bbox": [w, s, e, n]} (EPSG:4326) covering the old and the new
-- geometries of the rows it touched, when its transaction commits; TRUNCATE sends the whole world.
-- Statement-level triggers with transition tables: one notification per statement, whatever its row count,
-- so the payload stays far below PostgreSQL's 8000-byte limit. PostgreSQL 10 or later, PostGIS.

-- The box of the changed rows. TG_ARGV[0]: the channel; TG_ARGV[1]: the geometry column. The transition tables
-- are named old_rows and new_rows by tileserver_expire_install; which exist depends on the event.
CREATE OR REPLACE FUNCTION tileserver_expire_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  extent box2d;
  g text := quote_ident(TG_ARGV[1]);
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- No transition table exists for TRUNCATE: every tile of the table is stale.
    PERFORM pg_notify(TG_ARGV[0], json_build_object('table', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, 'bbox', json_build_array(-180, -90, 180, 90))::text);
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    EXECUTE format('SELECT ST_Extent(ST_Transform(%s, 4326)) FROM new_rows WHERE %s IS NOT NULL AND NOT ST_IsEmpty(%s)', g, g, g) INTO extent;
  ELSIF TG_OP = 'DELETE' THEN
    EXECUTE format('SELECT ST_Extent(ST_Transform(%s, 4326)) FROM old_rows WHERE %s IS NOT NULL AND NOT ST_IsEmpty(%s)', g, g, g) INTO extent;
  ELSE
    -- An UPDATE: where the rows were and where they are now (an attribute change alone gives the same box twice).
    EXECUTE format('SELECT ST_Extent(ST_Transform(geom, 4326)) FROM (SELECT %s AS geom FROM old_rows UNION ALL SELECT %s FROM new_rows) AS changed WHERE geom IS NOT NULL AND NOT ST_IsEmpty(geom)', g, g) INTO extent;
  END IF;
  -- A statement that touched no row, or only rows without geometry, changed no tile.
  IF extent IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify(TG_ARGV[0], json_build_object(
    'table', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME,
    'bbox', json_build_array(ST_XMin(extent), ST_YMin(extent), ST_XMax(extent), ST_YMax(extent))
  )::text);
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
