# OWSLib, the Python OGC client, editing features of a writable collection (test/owslib-edits.test.ts runs it in a
# Debian 13 container with python3-owslib 0.33). Every request goes through OWSLib's own calls; the outcome of
# each step is printed as one JSON object on stdout for the test to check against the database and the server.
#
# Two things of OWSLib 0.33 decide how credentials travel (owslib/ogcapi/__init__.py and owslib/util.py):
# - `headers=` reaches GET, POST and PUT, but not DELETE (`_request` calls `http_delete(url, auth=self.auth)`);
#   an `Authentication(auth_delegate=...)` (a requests AuthBase) reaches every method, so the key and If-Match
#   are set there.
# - The headers dict is the module's REQUEST_HEADERS, updated in place: headers given to one Features object are
#   sent by every later one. The unauthenticated try therefore comes first.
import json
import os
import sys

import owslib
from owslib.ogcapi.features import Features
from owslib.util import Authentication
from requests.auth import AuthBase

URL = os.environ['OGC_URL']
KEY = os.environ['OGC_KEY']
COLLECTION = os.environ['OGC_COLLECTION']


class Editor(AuthBase):
    """The key as a bearer token on every request, and If-Match while `if_match` is set."""

    def __init__(self, key):
        self.key = key
        self.if_match = None

    def __call__(self, r):
        r.headers['Authorization'] = f'Bearer {self.key}'
        if self.if_match is not None:
            r.headers['If-Match'] = self.if_match
        return r


def refused(call):
    """The status and body of a request OWSLib raised on (RuntimeError carrying the answer's text)."""
    try:
        call()
    except RuntimeError as err:
        try:
            problem = json.loads(str(err))
        except ValueError:
            return {'raised': True, 'text': str(err)[:300]}
        return {'raised': True, 'status': problem.get('status'), 'member': problem.get('member')}
    return {'raised': False}


out = {'version': owslib.__version__}

anonymous = Features(URL)
out['anonymous_create'] = refused(lambda: anonymous.collection_item_create(COLLECTION, {'type': 'Feature', 'properties': {'name': 'nobody'}, 'geometry': {'type': 'Point', 'coordinates': [0, 0]}}))

editor = Editor(KEY)
w = Features(URL, auth=Authentication(auth_delegate=editor))
out['collections'] = w.feature_collections()
out['names_before'] = sorted(f['properties']['name'] for f in w.collection_items(COLLECTION, limit=100)['features'])


def create(name, rank, lon, lat):
    w.collection_item_create(COLLECTION, {'type': 'Feature', 'properties': {'name': name, 'rank': rank}, 'geometry': {'type': 'Point', 'coordinates': [lon, lat]}})
    location = w.response_headers['Location']
    return location.rsplit('/', 1)[1], location


def read(fid):
    feature = w.collection_item(COLLECTION, fid)
    return feature, w.response_headers['ETag']


kept, out['kept_location'] = create('owslib-kept', 1, 7.4653, 51.5136)
gone, _ = create('owslib-gone', 2, 7.47, 51.52)
out['created'] = [kept, gone]
first, etag = read(kept)
out['kept_first'] = {'properties': first['properties'], 'geometry': first['geometry'], 'etag': etag}

replacement = {'type': 'Feature', 'properties': {'name': 'owslib-updated', 'rank': 5}, 'geometry': {'type': 'Point', 'coordinates': [7.5, 51.55]}}
out['update_without_if_match'] = refused(lambda: w.collection_item_update(COLLECTION, kept, replacement))
editor.if_match = '"00000000000000000000000000000000"'
out['update_stale'] = refused(lambda: w.collection_item_update(COLLECTION, kept, replacement))
editor.if_match = etag
out['update'] = w.collection_item_update(COLLECTION, kept, replacement)
out['update_etag'] = w.response_headers.get('ETag')
editor.if_match = None
after, etag_after = read(kept)
out['kept_after'] = {'properties': after['properties'], 'geometry': after['geometry'], 'etag': etag_after}

_, gone_etag = read(gone)
editor.if_match = gone_etag
out['delete'] = w.collection_item_delete(COLLECTION, gone)
editor.if_match = None
out['read_deleted'] = refused(lambda: w.collection_item(COLLECTION, gone))

# The other way to give credentials, `headers=`: POST and PUT carry them, DELETE does not (see above).
by_headers = Features(URL, headers={'Authorization': f'Bearer {KEY}', 'If-Match': etag_after})
out['headers_delete'] = refused(lambda: by_headers.collection_item_delete(COLLECTION, kept))

json.dump(out, sys.stdout)
print()
