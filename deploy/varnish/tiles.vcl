# Varnish in front of tileserver-ts (docs/live-data.md, "The edge"; docs/deployment.md): caches tile answers for
# their Cache-Control lifetime, files each under the keys of its Surrogate-Key header (the xkey vmod of Debian's
# varnish-modules), and lets tileserver-ts purge them by key when an expiry reaches them ([cache] purge_urls).
# Set the backend to your tileserver-ts and the purgers to the addresses tileserver-ts purges from.
vcl 4.1;

import xkey;

backend tileserver {
  .host = "127.0.0.1";
  .port = "8080";
}

# Who may purge: the machines running tileserver-ts (their admin-listener process sends the PURGE requests).
acl purgers {
  "127.0.0.1";
  "::1";
}

sub vcl_recv {
  if (req.method == "PURGE") {
    if (client.ip !~ purgers) {
      return (synth(403, "Forbidden"));
    }
    # Several keys a request, separated by spaces; a soft purge keeps the old answer for its grace time.
    if (req.http.xkey-softpurge) {
      set req.http.n-gone = xkey.softpurge(req.http.xkey-softpurge);
    } else if (req.http.xkey) {
      set req.http.n-gone = xkey.purge(req.http.xkey);
    } else {
      return (synth(400, "PURGE needs an xkey or xkey-softpurge header"));
    }
    return (synth(200, "Invalidated " + req.http.n-gone + " objects"));
  }
  if (req.method != "GET" && req.method != "HEAD") {
    return (pass);
  }
  # Tiles of sources, terrain products and styles; anything carrying credentials goes straight through.
  if (req.url !~ "^/(data|styles)/" || req.http.Authorization) {
    return (pass);
  }
  unset req.http.Cookie;
  return (hash);
}

sub vcl_backend_response {
  # tileserver-ts names the keys in Surrogate-Key; the xkey vmod reads them from the xkey header.
  if (beresp.http.Surrogate-Key) {
    set beresp.http.xkey = beresp.http.Surrogate-Key;
  }
}

sub vcl_deliver {
  unset resp.http.xkey;
  if (obj.hits > 0) {
    set resp.http.X-Cache = "hit";
  } else {
    set resp.http.X-Cache = "miss";
  }
}
