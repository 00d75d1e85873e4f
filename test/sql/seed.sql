-- Seed data of the PostGIS tests (test/helpers/postgres.ts runs it after CREATE EXTENSION postgis).
-- Every value a test checks is written here, so the tests compare against what the database holds.

-- Points in EPSG:4326, with a column of each common type (field types in TileJSON vector_layers).
CREATE TABLE public.places (
  id integer PRIMARY KEY,
  name text NOT NULL,
  rank integer,
  height double precision,
  open boolean,
  geom geometry(Point, 4326) NOT NULL
);
CREATE INDEX places_geom_idx ON public.places USING gist (geom);
INSERT INTO public.places VALUES
  (1, 'Ferry Building', 3, 75.5, true, ST_SetSRID(ST_MakePoint(-122.3937, 37.7955), 4326)),
  (2, 'Coit Tower', 2, 64.0, false, ST_SetSRID(ST_MakePoint(-122.4058, 37.8024), 4326)),
  (3, 'Twin Peaks', 1, 281.9, true, ST_SetSRID(ST_MakePoint(-122.4477, 37.7544), 4326)),
  (4, 'Sydney Opera House', 5, 65.0, true, ST_SetSRID(ST_MakePoint(151.2153, -33.8568), 4326));

-- Lines in EPSG:3857 (already web mercator: no transform needed), no primary key.
CREATE TABLE public.roads (
  gid integer,
  road_name text,
  lanes smallint,
  geom geometry(LineString, 3857)
);
CREATE INDEX roads_geom_idx ON public.roads USING gist (geom);
INSERT INTO public.roads VALUES
  (10, 'Market Street', 4, ST_Transform(ST_SetSRID(ST_MakeLine(ST_MakePoint(-122.4194, 37.7749), ST_MakePoint(-122.3937, 37.7955)), 4326), 3857)),
  (11, 'Lombard Street', 2, ST_Transform(ST_SetSRID(ST_MakeLine(ST_MakePoint(-122.4250, 37.8010), ST_MakePoint(-122.4170, 37.8020)), 4326), 3857));

-- Polygons in EPSG:4326 in a schema of their own, with two geometry columns (the first is the default).
CREATE SCHEMA parks;
CREATE TABLE parks.areas (
  area_id bigint PRIMARY KEY,
  title varchar(80),
  tags jsonb,
  outline geometry(Polygon, 4326),
  centre geometry(Point, 4326)
);
CREATE INDEX areas_outline_idx ON parks.areas USING gist (outline);
INSERT INTO parks.areas VALUES
  (100, 'Golden Gate Park', '{"kind": "park"}',
   ST_GeomFromText('POLYGON((-122.511 37.765, -122.453 37.765, -122.453 37.774, -122.511 37.774, -122.511 37.765))', 4326),
   ST_SetSRID(ST_MakePoint(-122.482, 37.769), 4326));

-- A table the reader role may not select from: auto_publish must not offer it.
CREATE TABLE public.secret_sites (id integer, geom geometry(Point, 4326));
INSERT INTO public.secret_sites VALUES (1, ST_SetSRID(ST_MakePoint(0, 0), 4326));

-- Many points for the bench and the EXPLAIN test.
CREATE TABLE public.grid_points (id integer PRIMARY KEY, value integer, geom geometry(Point, 3857));
INSERT INTO public.grid_points
  SELECT i, i % 97, ST_Transform(ST_SetSRID(ST_MakePoint(-122.52 + (i % 100) * 0.0015, 37.70 + (i / 100) * 0.0012), 4326), 3857)
  FROM generate_series(0, 9999) AS i;
CREATE INDEX grid_points_geom_idx ON public.grid_points USING gist (geom);
ANALYZE;

-- A tile function of (z, x, y): the places of the tile as one layer "fn_places".
CREATE FUNCTION public.places_fn(z integer, x integer, y integer) RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT ST_AsMVT(t, 'fn_places', 4096, 'geom') FROM (
    SELECT id, name, ST_AsMVTGeom(ST_Transform(geom, 3857), ST_TileEnvelope(z, x, y), 4096, 64, true) AS geom
    FROM public.places WHERE geom && ST_Transform(ST_TileEnvelope(z, x, y, margin => 64.0 / 4096), 4326)
  ) AS t WHERE geom IS NOT NULL
$$;

-- A tile function of (z, x, y, query json): one point at the tile's centre whose properties echo the query.
CREATE FUNCTION public.echo_query(z integer, x integer, y integer, query json) RETURNS bytea LANGUAGE sql STABLE AS $$
  SELECT ST_AsMVT(t, 'echo', 4096, 'geom') FROM (
    SELECT query::text AS query_text, coalesce(query->>'name', '') AS name,
           ST_AsMVTGeom(ST_Centroid(ST_TileEnvelope(z, x, y)), ST_TileEnvelope(z, x, y)) AS geom
  ) AS t
$$;

-- A function that is slow on purpose (statement_timeout tests). It counts its calls in a sequence, which a
-- cancelled statement does not roll back.
CREATE SEQUENCE public.slow_calls;
CREATE FUNCTION public.slow_tiles(z integer, x integer, y integer) RETURNS bytea LANGUAGE plpgsql AS $$
BEGIN
  PERFORM nextval('public.slow_calls');
  PERFORM pg_sleep(1.5);
  RETURN '\x'::bytea;
END
$$;

-- Out-of-database rasters: the files a test registers, with footprints in EPSG:3857.
CREATE TABLE public.raster_files (
  collection text NOT NULL,
  ord integer NOT NULL,
  filepath text NOT NULL,
  footprint geometry(Polygon, 3857) NOT NULL,
  rescale_min double precision,
  rescale_max double precision
);
CREATE FUNCTION public.naip(z integer, x integer, y integer, tile_bbox geometry, params json)
RETURNS TABLE(filepath text) LANGUAGE sql STABLE AS $$
  SELECT filepath FROM public.raster_files
  WHERE collection = 'naip' AND footprint && tile_bbox ORDER BY ord
$$;
-- The DEM: rescale bounds come from the request (?lo=&hi=) when given, else from the table.
CREATE FUNCTION public.dem(z integer, x integer, y integer, tile_bbox geometry, params json)
RETURNS TABLE(filepath text, rescale_min double precision, rescale_max double precision) LANGUAGE sql STABLE AS $$
  SELECT filepath, coalesce((params->>'lo')::double precision, rescale_min), coalesce((params->>'hi')::double precision, rescale_max)
  FROM public.raster_files WHERE collection = coalesce(params->>'collection', 'dem') AND footprint && tile_bbox ORDER BY ord
$$;

-- The role auto_publish tests connect as: it may read places, roads, parks.areas and grid_points, not secret_sites.
CREATE ROLE reader LOGIN;
GRANT USAGE ON SCHEMA parks TO reader;
GRANT SELECT ON public.places, public.roads, parks.areas, public.grid_points, public.raster_files TO reader;
REVOKE ALL ON public.secret_sites FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.slow_tiles(integer, integer, integer) FROM PUBLIC;
