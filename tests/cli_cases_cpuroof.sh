# CLI cases (sourced by cli_test.sh): kvlab machine, bench decode, cpu-roofline.
tmp_cpuroof=$(mktemp -d)

# machine: small sizes so the case takes a second; the entry parses as a hardware entry.
expect_exit 0 machine --size-mib 16 --repeats 1 --gemm-n 64 --format json
if kv machine --size-mib 16 --repeats 1 --gemm-n 64 --format json |
   python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["name"]=="local" and j["bandwidth_bytes_per_s"]>0 and j["fp32_flops_per_s"]>0' ; then
  echo "ok: machine --format json is a hardware entry"
else
  echo "FAIL: machine --format json is not a hardware entry"; failures=$((failures + 1))
fi
expect_exit 2 machine --size-mib 8
expect_exit 2 machine --repeats 0
expect_exit 2 machine --format csv
expect_stderr_mentions size-mib machine --size-mib abc

# --save, then roofline --gpu local reads it; without the file, one clear line.
KVLAB_LOCAL_HARDWARE=$tmp_cpuroof/none.json expect_usage_error "kvlab machine --save" roofline --model llama-2-7b --gpu local
KVLAB_LOCAL_HARDWARE=$tmp_cpuroof/local.json expect_exit 0 machine --size-mib 16 --repeats 1 --gemm-n 64 --save
KVLAB_LOCAL_HARDWARE=$tmp_cpuroof/local.json expect_exit 0 roofline --model llama-2-7b --gpu local

# bench decode: a tiny run; --vs-torch without a working interpreter exits 2 with the install line.
expect_exit 0 bench decode --d-model 64 --batch 1 --layers 1 --steps 2 --repeats 1
expect_exit 2 bench decode --d-model 100
expect_exit 2 bench nosuch
expect_usage_error "python3-torch" bench decode --vs-torch --python /nonexistent/python3

# cpu-roofline: bad options exit 2 naming the option; --quick runs (its verdict on a tiny model
# means little: exit 0 or 1). That `all` leaves the benchmark out is asserted by tests/all_test.sh,
# on its one `all --format json` run (one `all` under ASan+UBSan costs ~15 s).
expect_exit 2 cpu-roofline --batch 0
expect_usage_error kv-heads cpu-roofline --kv-heads 3
kv cpu-roofline --quick --format json > "$tmp_cpuroof/q.json"; rc=$?
if { [ $rc = 0 ] || [ $rc = 1 ]; } && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert "decode_bandwidth_fraction" in j["metrics"]' "$tmp_cpuroof/q.json"; then
  echo "ok: cpu-roofline --quick -> $rc, json with decode_bandwidth_fraction"
else
  echo "FAIL: cpu-roofline --quick exited $rc or its json lacks the metrics"; failures=$((failures + 1))
fi
rm -rf "$tmp_cpuroof"
