# Decoding followed by execution, and deserialising (which runs code on load).
#%%
import base64
exec(base64.b64decode("aW1wb3J0IG9zOyBvcy5zeXN0ZW0oJ2lkJyk="))
#%%
import base64 as b
eval(b.b64decode(blob).decode())
#%%
import zlib, base64
exec(zlib.decompress(base64.b64decode(PAYLOAD)))
#%%
import codecs
exec(codecs.decode("vzcbeg bf; bf.flfgrz('vq')", "rot13"))
#%%
import binascii
exec(binascii.unhexlify("7072696e7428312b3129"))
#%%
exec(bytes.fromhex("696d706f7274206f73").decode())
#%%
import marshal, types
code = marshal.loads(data)
types.FunctionType(code, globals(), "f")()
#%%
import pickle
obj = pickle.loads(received_bytes)
#%%
import pickle, base64
state = pickle.loads(base64.b64decode(token))
#%%
import pickle
with open(upload_path, "rb") as fh:
    model = pickle.load(fh)
#%%
import dill
fn = dill.loads(blob)
fn()
#%%
import cloudpickle
task = cloudpickle.loads(msg)
#%%
import lzma, base64
src = lzma.decompress(base64.b85decode(x)).decode()
exec(src)
#%%
import bz2
exec(bz2.decompress(open("x.bz2", "rb").read()))
#%%
import gzip
exec(gzip.decompress(raw))
#%%
import base64
cmd = base64.b64decode("cm0gLXJmIH4=").decode()
__import__("os").system(cmd)
#%%
s = "".join(chr(c) for c in [105, 109, 112, 111, 114, 116])
exec(s + " os")
#%%
import base64
name = base64.b64decode(b"b3M=").decode()
__import__(name).system("id")
#%%
import marshal
exec(marshal.loads(bytes.fromhex(h)))
#%%
import base64
payload = base64.b32decode(encoded)
exec(compile(payload, "<p>", "exec"))
#%%
data = "6f732e73797374656d282269642229"
eval(bytes.fromhex(data).decode())
#%%
import pickle
pickle.Unpickler(open("cache.bin", "rb")).load()
#%%
import base64, subprocess
subprocess.run(base64.b64decode(c).decode(), shell=True)
#%%
import quopri
exec(quopri.decodestring(q))
