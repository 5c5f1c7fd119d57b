"""Copies the entries KEY.npy of the .npz SRC named on the command line to
DST, stored or deflated (Python's zipfile, no numpy): npz.test makes the
inputs of a run from the outputs of another.

    npz-keep.py SRC DST stored|deflated KEY...
"""
import sys
import zipfile

src, dst, method, keys = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
compression = {"stored": zipfile.ZIP_STORED,
               "deflated": zipfile.ZIP_DEFLATED}[method]
with zipfile.ZipFile(src) as zin, \
        zipfile.ZipFile(dst, "w", compression=compression) as zout:
    for key in keys:
        zout.writestr(key + ".npy", zin.read(key + ".npy"))
