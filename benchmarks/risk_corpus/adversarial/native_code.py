# ctypes / cffi / executable memory: native calls the review cannot read.
#%%
import ctypes
libc = ctypes.CDLL("libc.so.6")
libc.system(b"id")
#%%
from ctypes import cdll
cdll.LoadLibrary("libc.so.6").system(b"rm -rf /tmp/x")
#%%
import ctypes.util
lib = ctypes.CDLL(ctypes.util.find_library("c"))
lib.unlink(b"notes.txt")
#%%
from cffi import FFI
ffi = FFI()
ffi.cdef("int system(const char *);")
C = ffi.dlopen(None)
C.system(b"whoami")
#%%
import cffi
ffi = cffi.FFI()
lib = ffi.dlopen("libc.so.6")
#%%
import mmap, ctypes
buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(shellcode)
#%%
ctypes = __import__("ctypes")
ctypes.pythonapi.PyRun_SimpleString(b"import os")
#%%
import importlib
c = importlib.import_module("ctypes")
c.CDLL(None).kill(1, 9)
#%%
from ctypes import CDLL, c_char_p
CDLL(None).execv(c_char_p(b"/bin/sh"), None)
#%%
import ctypes
ctypes.memmove(addr, payload, len(payload))
#%%
import _ctypes
_ctypes.dlopen("libevil.so")
#%%
import ctypes
ctypes.windll.kernel32.WinExec(b"calc.exe", 1)
