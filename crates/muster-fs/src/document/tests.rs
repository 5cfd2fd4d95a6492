use std::collections::BTreeMap;

use super::*;

type Doc = Document<BTreeMap<String, String>, BTreeMap<String, String>>;

const EXPECTED: Expected<'static> = Expected {
    kind: "Thing",
    name: "one",
    namespace: "ns",
};

fn decode(text: &str) -> Result<(Doc, ValidationErrors), DecodeError> {
    decode_document(text, &EXPECTED)
}

fn envelope_errors(text: &str) -> ValidationErrors {
    match decode(text) {
        Err(DecodeError::Envelope(errs)) => errs,
        other => panic!("expected envelope errors, got {other:?}"),
    }
}

#[test]
fn full_resource_with_defaults() {
    let (doc, errs) = decode(
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Thing\nspec:\n  a: b\n\
         status:\n  c: d\n",
    )
    .unwrap();
    assert!(errs.is_empty());
    assert_eq!(doc.metadata.name, "one");
    assert_eq!(doc.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(doc.spec["a"], "b");
    assert_eq!(doc.status.unwrap()["c"], "d");
}

#[test]
fn explicit_namespace_is_kept() {
    let (doc, _) = decode(
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Thing\n\
         metadata:\n  name: one\n  namespace: team\nspec: {}\n",
    )
    .unwrap();
    assert_eq!(doc.metadata.namespace.as_deref(), Some("team"));
    assert!(doc.status.is_none());
}

#[test]
fn flat_file_is_refused() {
    let errs = envelope_errors("a: b\nc: d\n");
    assert_eq!(errs.len(), 1, "{errs}");
    assert!(
        errs.contains("spec", "must be a full Thing resource"),
        "{errs}"
    );
    assert!(errs.contains("spec", "flat files are not read"), "{errs}");
}

#[test]
fn wrong_kind_and_version_are_named() {
    let errs = envelope_errors("apiVersion: v1\nkind: Other\nspec: {}\n");
    assert!(errs.contains(
        "apiVersion",
        "must be muster.giantswarm.io/v1alpha1, not v1"
    ));
    assert!(errs.contains("kind", "must be Thing, not Other"));
}

#[test]
fn missing_kind_blocks_missing_version_does_not() {
    let errs = envelope_errors("apiVersion: muster.giantswarm.io/v1alpha1\nspec: {}\n");
    assert!(
        errs.contains("kind", "is required and must be Thing"),
        "{errs}"
    );

    let (_, errs) = decode("kind: Thing\nspec: {}\n").unwrap();
    assert!(errs.contains("apiVersion", "is required"), "{errs}");
}

#[test]
fn name_must_match_file_name() {
    let (_, errs) = decode(
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Thing\n\
         metadata:\n  name: two\nspec: {}\n",
    )
    .unwrap();
    assert!(errs.contains(
        "metadata.name",
        "must equal the file name \"one\", not \"two\""
    ));
}

#[test]
fn type_errors_carry_the_field_path() {
    let err = decode("apiVersion: muster.giantswarm.io/v1alpha1\nkind: Thing\nspec:\n  a: [1]\n")
        .unwrap_err();
    let DecodeError::Parse(err) = err else {
        panic!("{err:?}")
    };
    assert_eq!(err.field, "spec.a");
    assert_eq!(err.location.map(|l| l.line), Some(4));
}
