use super::*;

#[test]
fn three_crds_in_the_muster_group() {
    let names: Vec<_> = crds()
        .into_iter()
        .map(|c| c.metadata.name.unwrap_or_default())
        .collect();
    assert_eq!(
        names,
        [
            "mcpservers.muster.giantswarm.io",
            "workflows.muster.giantswarm.io",
            "workflowexecutions.muster.giantswarm.io"
        ]
    );
}

/// The committed CRDs are what `muster crd` generates. Set `UPDATE_CRDS=1` to rewrite them.
#[test]
fn committed_yaml_is_current() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds/muster.yaml");
    let generated = crds_yaml().unwrap();
    if std::env::var_os("UPDATE_CRDS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "deploy/crds/muster.yaml is stale: run `UPDATE_CRDS=1 cargo test -p muster-k8s crd` \
         (or `muster crd > deploy/crds/muster.yaml`)"
    );
}
