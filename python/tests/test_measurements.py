"""Malformed measurement CSVs are errors that name the line and column."""

import pytest

from overlap.measurements import (CommKey, GemmKey, MeasurementError,
                                  parse_measurements, read_measurements)

HEAD = "kind,collective,ranks,dtype,m,n,k,bytes,time_us\n"


def err(text):
    with pytest.raises(MeasurementError) as info:
        parse_measurements(text, "bench.csv")
    return str(info.value)


@pytest.mark.parametrize("row, expected", [
    ("gemm,,,f16,128,8192,3072,,abc", "bench.csv:2: column 'time_us': "
     "expected a positive number, got 'abc'"),
    ("gemm,,,f16,128,8192,3072,,-5", "column 'time_us': expected a positive"),
    ("gemm,,,f16,128,8192,3072,,nan", "column 'time_us'"),
    ("gemm,,,f16,,8192,3072,,10", "bench.csv:2: column 'm': expected an "
     "integer >= 1, got ''"),
    ("gemm,,,f16,12.5,8192,3072,,10", "column 'm'"),
    ("gemm,,,f8,128,8192,3072,,10", "column 'dtype': expected one of"),
    ("matmul,,,f16,128,8192,3072,,10", "column 'kind': expected 'gemm' or "
     "'comm', got 'matmul'"),
    ("comm,all-to-all,8,f16,,,,1024,10", "column 'collective'"),
    ("comm,all-reduce,1,f16,,,,1024,10", "column 'ranks': expected an "
     "integer >= 2, got '1'"),
    ("comm,all-reduce,8,f16,,,,,10", "column 'bytes': a comm row needs "
     "'bytes', or 'm' and 'n'"),
    ("comm,all-gather,8,f16,128,8192,,,10", "or 'm' and 'k'"),
    ("comm,all-reduce,8,f16,,,,0,10", "column 'bytes': expected a positive"),
    ("gemm,,,f16,128,8192,3072,10", "bench.csv:2: expected 9 fields"),
])
def test_bad_rows_name_line_and_column(row, expected):
    assert expected in err(HEAD + row + "\n")


def test_line_numbers_count_comments_and_blank_lines():
    text = ("# measured on node 3\n" + HEAD + "\n"
            "gemm,,,f16,128,8192,3072,,10\n# warm\n"
            "gemm,,,f16,256,8192,3072,,x\n")
    assert err(text).startswith("bench.csv:6: column 'time_us'")


def test_header_problems():
    assert "column 'time': unknown column" in err("kind,m,n,k,time\n")
    assert "column 'time_us': missing" in err("kind,m,n,k\n")
    assert "column 'm': appears twice" in err("kind,m,m,time_us\n")
    assert "empty file" in err("# nothing\n\n")
    assert "no measurements" in err(HEAD)


def test_good_file_groups_series(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text(HEAD +
                 "gemm,,,,128,8192,3072,,10\n"        # dtype defaults to f16
                 "gemm,,,bf16,128,8192,3072,,11\n"
                 "comm,all-reduce,8,f16,128,8192,,,20\n"  # bytes from m*n*2
                 "comm,all-gather,4,f32,,,,4096,30\n"
                 '"gemm",,,f16,256,8192,3072,,"20"\n')
    s = read_measurements(p)
    assert s[GemmKey(8192, 3072, "f16")].x == [128.0, 256.0]
    assert s[GemmKey(8192, 3072, "bf16")].t == [11.0]
    assert s[CommKey("all-reduce", 8)].x == [128 * 8192 * 2.0]
    assert s[CommKey("all-gather", 4)].lines == [5]


def test_missing_file(tmp_path):
    with pytest.raises(MeasurementError, match="cannot read"):
        read_measurements(tmp_path / "nope.csv")
