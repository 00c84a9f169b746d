"""test_prices_aws.py: `roofline prices` against the local AWS fake (fake_aws.py): its GetProducts
requests must pass the fake's SigV4 verifier (with and without a session token), every page is
followed, the prices land in the prices file with their source and date, --offline reads only the
file, and no credential reaches the output or the file."""
import json
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_aws  # noqa: E402

BIN = os.environ.get("ROOFLINE_BIN", "build/roofline")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


@pytest.fixture(params=[None, fake_aws.TEST_SESSION_TOKEN], ids=["keys", "session-token"])
def fake(request):
    with fake_aws.FakeAws(session_token=request.param, gap_s=0, page_size=1) as f:
        yield f


def env_for(fake, **more):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=fake_aws.TEST_ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=fake_aws.TEST_SECRET_KEY,
               AWS_ENDPOINT_URL_PRICING=fake.url, AWS_REGION="us-east-1",
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
    if fake.session_token:
        env["AWS_SESSION_TOKEN"] = fake.session_token
    env.update(more)
    return env


def run(args, env):
    return subprocess.run([BIN, "prices"] + args, env=env, capture_output=True, text=True,
                          timeout=120)


def no_secret(*texts):
    for t in texts:
        assert fake_aws.TEST_SECRET_KEY not in t
        assert fake_aws.TEST_SESSION_TOKEN not in t


def test_prices_fetched_signed_and_paged(fake, tmp_path):
    out = tmp_path / "prices.json"
    shutil.copy(os.path.join(ROOT, "data", "prices.json"), out)
    before = json.loads(out.read_text())
    r = run(["--instance", "g6.xlarge", "--instance", "g5g.2xlarge", "--instance", "inf2.xlarge",
             "--instance", "trn1.2xlarge", "--sagemaker-instance", "ml.g6.xlarge",
             "--bedrock-model", "amazon.nova-micro-v1:0", "-o", str(out)], env_for(fake))
    assert r.returncode == 0, r.stderr
    log = [e for e in fake.log if e["op"] == "GetProducts"]
    assert log and all(e["status"] == 200 for e in log), log
    # page size 1: Bedrock's two products (input, output) took two pages at least
    assert len(log) >= 7
    p = json.loads(out.read_text())
    want = {"g6.xlarge": 0.8048, "g5g.2xlarge": 0.556, "inf2.xlarge": 0.7582,
            "trn1.2xlarge": 1.3438, "ml.g6.xlarge": 1.1267}
    for name, usd in want.items():
        e = p["instances"][name]
        assert e["usd_per_hour"] == usd
        assert e["source"].startswith("aws-pricing-api GetProducts us-east-1")
        assert len(e["date"]) == 10 and e["region"] == "us-east-1"
        assert e["hardware"] == before["instances"][name]["hardware"]  # kept
    nova = p["per_token"]["amazon.nova-micro-v1:0"]
    assert abs(nova["usd_per_m_input"] - 0.035) < 1e-9 and abs(nova["usd_per_m_output"] - 0.14) < 1e-9
    assert "AmazonBedrock" in nova["source"]
    assert p["instances"]["m7a.large"] == before["instances"]["m7a.large"]  # untouched
    no_secret(r.stdout, r.stderr, out.read_text())
    # offline: the file alone
    r = run(["--offline", "--instance", "g6.xlarge", "--bedrock-model", "amazon.nova-micro-v1:0",
             "-o", str(out)], env_for(fake, AWS_ENDPOINT_URL_PRICING="http://127.0.0.1:9"))
    assert r.returncode == 0 and "0.8048" in r.stdout and "aws-pricing-api" in r.stdout


def test_offline_names_what_is_missing(tmp_path):
    out = tmp_path / "prices.json"
    shutil.copy(os.path.join(ROOT, "data", "prices.json"), out)
    r = subprocess.run([BIN, "prices", "--offline", "--instance", "g6.xlarge", "--instance",
                        "p9.huge", "--sagemaker-instance", "ml.x9.big", "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "p9.huge" in r.stderr and "ml.x9.big" in r.stderr and str(out) in r.stderr
    assert "g6.xlarge" in r.stdout  # what it has is shown


def test_unknown_instance_and_bad_credentials(fake, tmp_path):
    out = tmp_path / "prices.json"
    r = run(["--instance", "p9.huge", "--instance", "g6.xlarge", "-o", str(out)], env_for(fake))
    assert r.returncode == 1 and "p9.huge" in r.stderr
    assert json.loads(out.read_text())["instances"]["g6.xlarge"]["usd_per_hour"] == 0.8048
    bad = "x" + fake_aws.TEST_SECRET_KEY[1:]
    r = run(["--instance", "g6.xlarge", "-o", str(tmp_path / "p2.json")],
            env_for(fake, AWS_SECRET_ACCESS_KEY=bad))
    assert r.returncode == 1 and "403" in r.stderr and "InvalidSignatureException" in r.stderr
    assert not (tmp_path / "p2.json").exists()
    no_secret(r.stdout, r.stderr)
    assert bad not in r.stdout + r.stderr


# ---------------------------------------------------------------- run files naming instance types

@pytest.fixture
def openai_fake(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import benchlib
    fs = benchlib.FakeServer(["--ttft-ms", "1", "--gap-ms", "1"], str(tmp_path / "fake.log"))
    try:
        yield fs
    finally:
        fs.stop()


def bench(tmp_path, run):
    rf = tmp_path / "run.json"
    rf.write_text(json.dumps(run))
    return subprocess.run([BIN, "bench", "--run", str(rf), "--no-progress"], capture_output=True,
                          text=True, timeout=300)


def test_bench_resolves_instance_through_prices_file(tmp_path, openai_fake):
    out = tmp_path / "run"
    run = {"backends": [{"name": "g6", "uri": "openai:" + openai_fake.url,
                         "instance": "g6.xlarge"}],
           "suites": ["speed"], "speed": {"runs": 1, "max_tokens": 8}, "membw": False,
           "out": str(out)}
    r = bench(tmp_path, run)
    assert r.returncode == 0, r.stderr
    cost = json.loads((out / "summary.json").read_text())["cost"]["backends"]["g6"]
    prices = json.load(open(os.path.join(ROOT, "data", "prices.json")))["instances"]["g6.xlarge"]
    assert cost["kind"] == "instance" and cost["usd_per_hour"] == prices["usd_per_hour"]
    assert cost["price"] == {"instance": "g6.xlarge", "usd_per_hour": prices["usd_per_hour"],
                             "source": prices["source"], "date": prices["date"]}
    saved = json.loads((out / "run.json").read_text())["backends"][0]["price"]
    assert saved["instance"] == "g6.xlarge"
    # an instance type the prices file lacks: refused before anything is sent
    run["backends"][0]["instance"] = "p9.huge"
    run["out"] = str(tmp_path / "run2")
    r = bench(tmp_path, run)
    assert r.returncode == 2
    assert "p9.huge" in r.stderr and "prices.json" in r.stderr and "backend 'g6'" in r.stderr
    assert not (tmp_path / "run2" / "records.jsonl").exists()


def test_seeds_six_refused_until_placeholders_replaced(tmp_path):
    src = os.path.join(ROOT, "data", "runs", "seeds-six.json")
    r = subprocess.run([BIN, "bench", "--run", src], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "placeholder '<your-region>'" in r.stderr and "backends[0].uri" in r.stderr
    run = json.load(open(src))
    names = {b["name"] for b in run["backends"]}
    assert names == {"bedrock", "sagemaker", "g6", "g5g", "inf2", "trn1"}
    prices = json.load(open(os.path.join(ROOT, "data", "prices.json")))
    for b in run["backends"]:
        if "instance" in b:  # every instance type has a price with its source and date
            e = prices["instances"][b["instance"]]
            assert e["usd_per_hour"] > 0 and e["source"] and e["date"]
    nova = prices["per_token"]["amazon.nova-micro-v1:0"]
    assert nova["usd_per_m_input"] == 0.035 and nova["usd_per_m_output"] == 0.14
