//! The dependency rules of docs/architecture.md, checked on the resolved graph.

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

/// Normal (non-dev, non-build) dependencies of every package, by package name.
fn normal_graph() -> HashMap<String, Vec<String>> {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--all-features"])
        .current_dir(muster_tests::workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let names: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = HashMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let deps = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null())
            })
            .map(|d| names[d["pkg"].as_str().unwrap()].to_owned())
            .collect();
        graph.insert(names[node["id"].as_str().unwrap()].to_owned(), deps);
    }
    graph
}

fn closure(graph: &HashMap<String, Vec<String>>, root: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_owned()];
    while let Some(pkg) = todo.pop() {
        for dep in graph.get(&pkg).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                todo.push(dep.clone());
            }
        }
    }
    seen
}

#[test]
fn contracts_and_engine_stay_free_of_kube_and_http() {
    let graph = normal_graph();
    for pkg in ["muster-core", "muster-workflow"] {
        let deps = closure(&graph, pkg);
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
    let graph = normal_graph();
    let middle = [
        "muster-workflow",
        "muster-aggregator",
        "muster-fs",
        "muster-k8s",
    ];
    for pkg in middle {
        let deps = closure(&graph, pkg);
        assert!(deps.contains("muster-core"), "{pkg} builds on muster-core");
        for other in middle.iter().filter(|o| **o != pkg) {
            assert!(!deps.contains(*other), "{pkg} must not depend on {other}");
        }
    }
}

#[test]
fn no_openssl_anywhere() {
    let graph = normal_graph();
    let deps = closure(&graph, "muster-bin");
    for banned in ["openssl-sys", "native-tls"] {
        assert!(!deps.contains(banned), "muster-bin pulls in {banned}");
    }
}
