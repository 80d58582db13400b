"""An owner app for the "Any app" tests, on aiohttp (Debian's
python3-aiohttp): a WebSocket that echoes, and a page behind a login
cookie with redirects, as a web app with a login is, and pages that set
a cookie for a wider domain and show the cookies a request brought.

usage: anyapp_server.py PORT
"""
import sys

from aiohttp import web


async def ws(request):
    w = web.WebSocketResponse()
    await w.prepare(request)
    async for msg in w:
        await w.send_str("echo:" + msg.data)
    return w


async def home(request):
    if request.cookies.get("sid") == "s3cret":
        return web.Response(text="hello, logged in; host " + request.host, content_type="text/html")
    raise web.HTTPFound("/login")


async def login(request):
    if request.method == "POST":
        r = web.HTTPSeeOther("/")
        r.set_cookie("sid", "s3cret", httponly=True, path="/")
        raise r
    # The browser submits the login form by itself.
    return web.Response(text='<form method="post" action="/login"><button>log in</button></form>'
                        '<script>document.forms[0].submit()</script>', content_type="text/html")


async def wide(request):
    # A cookie for a wider domain than the page's own host, as an app
    # that shares a login with its siblings sets one (?name=&domain=).
    r = web.Response(text="set " + request.query["name"], content_type="text/html")
    r.set_cookie(request.query["name"], "1", domain=request.query["domain"], path="/")
    return r


async def cookies(request):
    return web.Response(text="cookies: " + request.headers.get("Cookie", "(none)"), content_type="text/html")


async def effects(request):
    return web.Response(text=str(request.app["posts"]))


async def post(request):
    request.app["posts"] += 1
    return web.Response(text="posted")


app = web.Application()
app["posts"] = 0
app.add_routes([web.get("/ws", ws), web.get("/", home), web.get("/login", login), web.post("/login", login),
                web.get("/effects", effects),
                web.get("/wide", wide), web.get("/cookies", cookies), web.post("/post", post)])
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
