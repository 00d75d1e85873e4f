-- Seed of the OGC API tests (test/ogc-*.test.ts): points with a column of each filterable type, NULLs, and
-- names holding the characters filters get wrong (quotes, %, _, backslash, ;, comment markers, non-ASCII).
CREATE TABLE public.ogc_points (
  id integer PRIMARY KEY,
  name text,
  kind varchar(20),
  score double precision,
  rank integer,
  active boolean,
  geom geometry(Point, 4326) NOT NULL
);
CREATE INDEX ogc_points_geom_idx ON public.ogc_points USING gist (geom);
INSERT INTO public.ogc_points
  SELECT i,
         CASE WHEN i % 13 = 0 THEN NULL
              ELSE (ARRAY['alpha', 'Beta', 'O''Brien', 'semi;colon', '50% off', 'under_score', 'back\slash', 'ünïcödé', '日本', '🙂 smile', '--dash', 'a"quote'])[1 + i % 12] || ' ' || i END,
         (ARRAY['park', 'cafe', 'shop', NULL])[1 + i % 4],
         CASE WHEN i % 7 = 0 THEN NULL ELSE round(((i * 37) % 100)::numeric / 4, 2)::double precision END,
         i % 5,
         CASE WHEN i % 6 = 0 THEN NULL ELSE i % 2 = 0 END,
         ST_SetSRID(ST_MakePoint(-10 + (i % 10) * 2.5, -5 + (i / 10) * 1.5), 4326)
  FROM generate_series(1, 57) AS i;
