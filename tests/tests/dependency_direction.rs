//! The dependency rules of docs/architecture.md, checked on each crate's resolved dependencies.

use std::collections::BTreeSet;
use std::process::Command;

/// The names of every normal (non-dev, non-build) dependency of `pkg`, direct or not, with
/// features resolved for `pkg` alone, as a build of that crate by itself would resolve them.
/// (`cargo metadata` unifies features across the whole workspace, so it would charge a crate
/// with the optional dependencies its dependents switch on.)
fn closure(pkg: &str) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree", "-e", "normal", "--prefix", "none", "--format", "{p}", "-p", pkg,
        ])
        .current_dir(muster_tests::workspace_root())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != pkg)
        .map(str::to_owned)
        .collect()
}

#[test]
fn contracts_and_engine_stay_free_of_kube_and_http() {
    for pkg in ["muster-core", "muster-workflow"] {
        let deps = closure(pkg);
        assert!(
            deps.contains("serde"),
            "{pkg}: the graph was read ({deps:?})"
        );
        for banned in [
            "kube",
            "kube-client",
            "k8s-openapi",
            "axum",
            "tower-http",
            "reqwest",
            "hyper",
        ] {
            assert!(!deps.contains(banned), "{pkg} must not depend on {banned}");
        }
    }
}

#[test]
fn middle_crates_never_depend_on_each_other() {
    let middle = [
        "muster-workflow",
        "muster-aggregator",
        "muster-fs",
        "muster-k8s",
    ];
    for pkg in middle {
        let deps = closure(pkg);
        assert!(deps.contains("muster-core"), "{pkg} builds on muster-core");
        for other in middle.iter().filter(|o| **o != pkg) {
            assert!(!deps.contains(*other), "{pkg} must not depend on {other}");
        }
    }
}

#[test]
fn no_openssl_anywhere() {
    let deps = closure("muster-bin");
    for banned in ["openssl-sys", "native-tls"] {
        assert!(!deps.contains(banned), "muster-bin pulls in {banned}");
    }
}

#[test]
fn kube_is_only_under_muster_k8s_and_the_binary() {
    for pkg in ["muster-k8s", "muster-bin"] {
        let deps = closure(pkg);
        assert!(
            deps.contains("kube") && deps.contains("k8s-openapi"),
            "{pkg}: {deps:?}"
        );
    }
    for pkg in [
        "muster-core",
        "muster-workflow",
        "muster-aggregator",
        "muster-fs",
    ] {
        let deps = closure(pkg);
        for banned in ["kube", "kube-client", "kube-runtime", "k8s-openapi"] {
            assert!(!deps.contains(banned), "{pkg} must not depend on {banned}");
        }
    }
}
