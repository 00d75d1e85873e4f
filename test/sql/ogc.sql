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

-- Feature ids of key types a JavaScript number or a string comparison would get wrong: a uuid key, a date key,
-- and bigint keys above 2^53 (9007199254740993 is not a double; Number() would read it as ...992), with numeric
-- values a double would round.
CREATE TABLE public.ogc_uuid_keys (
  id uuid PRIMARY KEY,
  label text,
  geom geometry(Point, 4326) NOT NULL
);
INSERT INTO public.ogc_uuid_keys
  SELECT md5('ogc ' || i)::uuid, 'u' || i, ST_SetSRID(ST_MakePoint(i, -i), 4326) FROM generate_series(1, 13) AS i;
CREATE TABLE public.ogc_date_keys (
  day date PRIMARY KEY,
  geom geometry(Point, 4326) NOT NULL
);
INSERT INTO public.ogc_date_keys
  SELECT DATE '2024-02-25' + i, ST_SetSRID(ST_MakePoint(i, i), 4326) FROM generate_series(0, 6) AS i;
CREATE TABLE public.ogc_big_keys (
  id bigint PRIMARY KEY,
  label text,
  amount numeric,
  geom geometry(Point, 4326) NOT NULL
);
INSERT INTO public.ogc_big_keys VALUES
  (9007199254740993, 'above 2^53', 12345678901234567890.123456789, ST_SetSRID(ST_MakePoint(1, 1), 4326)),
  (9007199254740992, 'exactly 2^53', 1.50, ST_SetSRID(ST_MakePoint(2, 2), 4326)),
  (9223372036854775807, 'bigint max', 0.1000000000000000000001, ST_SetSRID(ST_MakePoint(3, 3), 4326)),
  (-9223372036854775808, 'bigint min', -0.00, ST_SetSRID(ST_MakePoint(4, 4), 4326)),
  (42, 'small', 9007199254740993, ST_SetSRID(ST_MakePoint(5, 5), 4326));
