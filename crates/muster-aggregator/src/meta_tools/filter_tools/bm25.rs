//! BM25F ranking of tools against a natural-language query (reference §1.4).
//!
//! Each candidate has two fields, its name (weight 3) and the first line of its description
//! (weight 1). Tokens are lowercase runs of letters and digits, also split at lower→upper
//! boundaries (`ListPods` → `list`, `pods`). The IDF is computed over the candidates, a term
//! counts towards document frequency when it occurs in either field, and the generic verbs
//! `list` and `get` weigh a quarter.

use std::collections::HashMap;

const K1: f64 = 1.5;
const B: f64 = 0.75;
const NAME_WEIGHT: f64 = 3.0;
const DESCRIPTION_WEIGHT: f64 = 1.0;
/// Terms too generic to tell tools apart, and their weight.
const GENERIC_TERMS: [&str; 2] = ["list", "get"];
const GENERIC_WEIGHT: f64 = 0.25;

/// The tokenized tools of one snapshot as an inverted index: for every term, the tools whose
/// name or description's first line holds it, with how often. Built once per snapshot, so a
/// query reads only the postings of its own terms.
#[derive(Debug, Default)]
pub(in crate::meta_tools) struct Corpus {
    /// Term → its id, the index into `postings`.
    terms: HashMap<Box<str>, u32>,
    /// Per term id: the docs holding the term, in doc order.
    postings: Vec<Vec<Posting>>,
    /// Per doc: tokens in the name.
    name_lengths: Vec<u32>,
    /// Per doc: tokens in the description's first line.
    description_lengths: Vec<u32>,
}

/// One doc holding one term.
#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    in_name: u32,
    in_description: u32,
}

impl Corpus {
    /// Indexes `docs`, each given as `(name, first line of the description)`; doc `i` is the
    /// `i`-th pair.
    pub(in crate::meta_tools) fn build<'a>(
        docs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let mut corpus = Self::default();
        for (doc, (name, description)) in docs.into_iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            let name_tokens = tokenize(name);
            let description_tokens = tokenize(description);
            corpus.name_lengths.push(length(&name_tokens));
            corpus.description_lengths.push(length(&description_tokens));
            for token in name_tokens {
                corpus.posting_of(token, doc).in_name += 1;
            }
            for token in description_tokens {
                corpus.posting_of(token, doc).in_description += 1;
            }
        }
        corpus
    }

    /// The posting of `term` in `doc`, added if missing (docs are indexed in order, so it is
    /// the last one of the term when present).
    fn posting_of(&mut self, term: String, doc: u32) -> &mut Posting {
        let next_id = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
        let id = *self.terms.entry(term.into_boxed_str()).or_insert(next_id);
        if id == next_id {
            self.postings.push(Vec::new());
        }
        let postings = &mut self.postings[id as usize];
        if postings.last().is_none_or(|p| p.doc != doc) {
            postings.push(Posting {
                doc,
                in_name: 0,
                in_description: 0,
            });
        }
        let last = postings.len() - 1;
        &mut postings[last]
    }

    /// Docs indexed.
    fn len(&self) -> usize {
        self.name_lengths.len()
    }
}

fn length(tokens: &[String]) -> u32 {
    u32::try_from(tokens.len()).unwrap_or(u32::MAX)
}

/// The docs of a [`Corpus`] a query ranks: all of them, or those a filter kept.
#[derive(Debug, Clone, Copy)]
pub(in crate::meta_tools) enum Candidates<'a> {
    /// Every doc.
    All,
    /// The docs whose index is `true`.
    Only(&'a [bool]),
}

impl Candidates<'_> {
    fn contains(self, doc: u32) -> bool {
        match self {
            Self::All => true,
            Self::Only(kept) => kept.get(doc as usize).copied().unwrap_or(false),
        }
    }
}

/// `(doc, score)` of every candidate with a positive score. The first `ordered` entries (all
/// of them when there are fewer) are the best ones, best first, ties in doc order; the rest
/// follow in no particular order. IDF and average field lengths are taken over the
/// candidates.
pub(in crate::meta_tools) fn rank(
    query: &str,
    corpus: &Corpus,
    candidates: Candidates<'_>,
    ordered: usize,
) -> Vec<(usize, f64)> {
    let mut terms: Vec<String> = Vec::new();
    for term in tokenize(query) {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    let (mut n, mut name_total, mut description_total) = (0_u64, 0_u64, 0_u64);
    for doc in 0..corpus.len() {
        let doc_id = u32::try_from(doc).unwrap_or(u32::MAX);
        if candidates.contains(doc_id) {
            n += 1;
            name_total += u64::from(corpus.name_lengths[doc]);
            description_total += u64::from(corpus.description_lengths[doc]);
        }
    }
    if terms.is_empty() || n == 0 {
        return Vec::new();
    }
    #[allow(clippy::cast_precision_loss)]
    let (n, avg_name, avg_description) = (
        n as f64,
        name_total as f64 / n as f64,
        description_total as f64 / n as f64,
    );

    // Terms are added in query order, so every doc's sum is formed in the same order as a
    // term-by-term scan of the doc would form it.
    let mut scores = vec![0.0_f64; corpus.len()];
    for term in &terms {
        let Some(&id) = corpus.terms.get(term.as_str()) else {
            continue;
        };
        let postings = &corpus.postings[id as usize];
        let held_by = |p: &&Posting| candidates.contains(p.doc);
        #[allow(clippy::cast_precision_loss)]
        let df = postings.iter().filter(held_by).count() as f64;
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let generic = GENERIC_TERMS.contains(&term.as_str());
        for posting in postings.iter().filter(held_by) {
            let doc = posting.doc as usize;
            // Plain multiply-add, no fused rounding: scores equal the original's to the bit.
            #[allow(clippy::suboptimal_flops)]
            let wtf = NAME_WEIGHT
                * normalized_tf(posting.in_name, corpus.name_lengths[doc], avg_name)
                + DESCRIPTION_WEIGHT
                    * normalized_tf(
                        posting.in_description,
                        corpus.description_lengths[doc],
                        avg_description,
                    );
            if wtf == 0.0 {
                continue;
            }
            let mut term_score = idf * wtf * (K1 + 1.0) / (wtf + K1);
            if generic {
                term_score *= GENERIC_WEIGHT;
            }
            scores[doc] += term_score;
        }
    }

    let mut ranked: Vec<(usize, f64)> = scores
        .into_iter()
        .enumerate()
        .filter(|&(_, score)| score > 0.0)
        .collect();
    // Docs are distinct, so this order is total and an unstable sort keeps ties in doc order.
    let best_first = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if ordered < ranked.len() {
        if ordered > 0 {
            ranked.select_nth_unstable_by(ordered - 1, best_first);
        }
        ranked[..ordered].sort_unstable_by(best_first);
    } else {
        ranked.sort_unstable_by(best_first);
    }
    ranked
}

/// `tf / (1 − b + b·len/avglen)`, or 0 when the term is absent or the field empty everywhere.
fn normalized_tf(count: u32, len: u32, avg: f64) -> f64 {
    if count == 0 || avg == 0.0 {
        return 0.0;
    }
    let (count, len) = (f64::from(count), f64::from(len));
    count / (1.0 - B + B * len / avg)
}

/// Lowercase runs of letters and digits, split at lower→upper case boundaries.
pub(in crate::meta_tools) fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in text.chars() {
        if c.is_alphabetic() {
            if c.is_uppercase() && previous.is_some_and(char::is_lowercase) && !current.is_empty() {
                tokens.push(std::mem::take(&mut current));
            }
            current.extend(c.to_lowercase());
        } else if c.is_numeric() {
            current.push(c);
        } else if !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
        previous = Some(c);
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// A score rounded to 4 decimals; a positive score never shows as 0.
pub(in crate::meta_tools) fn round_score(score: f64) -> f64 {
    let rounded = (score * 10_000.0).round() / 10_000.0;
    if rounded == 0.0 && score > 0.0 {
        0.0001
    } else {
        rounded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_words_snake_kebab_and_camel_case() {
        let table: [(&str, &[&str]); 6] = [
            (
                "x_rank_prometheus_query_range",
                &["x", "rank", "prometheus", "query", "range"],
            ),
            ("ListPods", &["list", "pods"]),
            ("getHTTPResponse", &["get", "httpresponse"]),
            ("k8s-graveler v2", &["k8s", "graveler", "v2"]),
            (
                "Query Prometheus metrics.",
                &["query", "prometheus", "metrics"],
            ),
            ("", &[]),
        ];
        for (text, expected) in table {
            assert_eq!(tokenize(text), expected, "{text}");
        }
    }

    /// Ranks `(name, description)` pairs.
    fn rank_texts(query: &str, texts: &[(&str, &str)]) -> Vec<(usize, f64)> {
        rank(
            query,
            &Corpus::build(texts.iter().copied()),
            Candidates::All,
            usize::MAX,
        )
    }

    const CORPUS: [(&str, &str); 4] = [
        (
            "x_rank_prometheus_query_range",
            "Query Prometheus metrics over a time range.",
        ),
        ("x_rank_metrics_overview", "Show a metrics summary."),
        ("x_rank_service_restart", "Restart a running service."),
        (
            "x_rank_grafana_dashboard",
            "Fetch a Grafana monitoring dashboard.",
        ),
    ];

    #[test]
    fn ranks_the_strongest_match_first_and_drops_non_matches() {
        let ranked = rank_texts("prometheus metrics query", &CORPUS);
        let order: Vec<usize> = ranked.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [0, 1]);
        assert!(ranked[0].1 > ranked[1].1);
        assert!(rank_texts("kubernetes", &CORPUS).is_empty());
        assert!(rank_texts("  ", &CORPUS).is_empty());
        assert!(rank_texts("query", &[]).is_empty());
    }

    #[test]
    fn scores_follow_the_formula() {
        // One doc, one term in the name only: idf = ln(1 + 0.5/1.5), ntf = 1 (len = avg),
        // wtf = 3, score = idf * 3 * 2.5 / 4.5.
        let ranked = rank_texts("alpha", &[("alpha", "")]);
        let idf = (1.0f64 + 0.5 / 1.5).ln();
        let expected = idf * 3.0 * 2.5 / 4.5;
        assert!((ranked[0].1 - expected).abs() < 1e-12);
        // Generic verbs weigh a quarter.
        let generic = rank_texts("list", &[("list", "")]);
        assert!((generic[0].1 - expected * 0.25).abs() < 1e-12);
    }

    #[test]
    fn ties_keep_catalogue_order_and_names_outweigh_descriptions() {
        let docs = [("b_tool", "pods"), ("a_pods", "other"), ("c_tool", "pods")];
        let order: Vec<usize> = rank_texts("pods", &docs).iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [1, 0, 2]);
    }

    /// The formula applied doc by doc, term by term, as the reference sets it out.
    fn scan_rank(query: &str, texts: &[(&str, &str)]) -> Vec<(usize, f64)> {
        let mut terms: Vec<String> = Vec::new();
        for term in tokenize(query) {
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        let docs: Vec<(Vec<String>, Vec<String>)> = texts
            .iter()
            .map(|(n, d)| (tokenize(n), tokenize(d)))
            .collect();
        if terms.is_empty() || docs.is_empty() {
            return Vec::new();
        }
        let count = |tokens: &[String], t: &str| tokens.iter().filter(|x| *x == t).count();
        let n = docs.len() as f64;
        let avg_name = docs.iter().map(|d| d.0.len()).sum::<usize>() as f64 / n;
        let avg_description = docs.iter().map(|d| d.1.len()).sum::<usize>() as f64 / n;
        let ntf = |c: usize, len: usize, avg: f64| {
            if c == 0 || avg == 0.0 {
                0.0
            } else {
                c as f64 / (1.0 - B + B * len as f64 / avg)
            }
        };
        let mut ranked = Vec::new();
        for (i, (name, description)) in docs.iter().enumerate() {
            let mut score = 0.0;
            for term in &terms {
                let df = docs
                    .iter()
                    .filter(|d| count(&d.0, term) + count(&d.1, term) > 0)
                    .count() as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                #[allow(clippy::suboptimal_flops)]
                let wtf = NAME_WEIGHT * ntf(count(name, term), name.len(), avg_name)
                    + DESCRIPTION_WEIGHT
                        * ntf(count(description, term), description.len(), avg_description);
                if wtf == 0.0 {
                    continue;
                }
                let mut term_score = idf * wtf * (K1 + 1.0) / (wtf + K1);
                if GENERIC_TERMS.contains(&term.as_str()) {
                    term_score *= GENERIC_WEIGHT;
                }
                score += term_score;
            }
            if score > 0.0 {
                ranked.push((i, score));
            }
        }
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranked
    }

    #[test]
    fn the_index_scores_every_doc_as_a_full_scan_does_to_the_bit() {
        let words = [
            "list", "get", "pods", "query", "metrics", "restart", "x", "pods", "logs", "Node",
        ];
        let texts: Vec<(String, String)> = (0..60_usize)
            .map(|i| {
                let name = format!(
                    "x_{}_{}{}",
                    words[i % 10],
                    words[(i * 7 + 3) % 10],
                    words[(i / 3) % 10]
                );
                let description = (0..i % 6)
                    .map(|k| words[(i * 3 + k * 5) % 10])
                    .collect::<Vec<_>>()
                    .join(" ");
                (name, description)
            })
            .collect();
        let pairs: Vec<(&str, &str)> = texts
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_str()))
            .collect();
        let corpus = Corpus::build(pairs.iter().copied());
        let kept: Vec<bool> = (0..pairs.len()).map(|i| i % 3 != 1).collect();
        let kept_pairs: Vec<(&str, &str)> = pairs
            .iter()
            .zip(&kept)
            .filter(|(_, k)| **k)
            .map(|(p, _)| *p)
            .collect();
        let kept_docs: Vec<usize> = (0..pairs.len()).filter(|&i| kept[i]).collect();
        for query in [
            "pods",
            "list pods",
            "restart node logs x",
            "get get metrics",
            "absent",
        ] {
            let full = scan_rank(query, &pairs);
            assert_eq!(
                rank(query, &corpus, Candidates::All, usize::MAX),
                full,
                "{query}"
            );
            for ordered in [0, 1, 4] {
                let head = rank(query, &corpus, Candidates::All, ordered);
                assert_eq!(head.len(), full.len(), "{query}: every match is kept");
                let n = ordered.min(full.len());
                assert_eq!(head[..n], full[..n], "{query}: the best {ordered} in order");
            }
            let expected: Vec<(usize, f64)> = scan_rank(query, &kept_pairs)
                .into_iter()
                .map(|(i, score)| (kept_docs[i], score))
                .collect();
            assert_eq!(
                rank(query, &corpus, Candidates::Only(&kept), usize::MAX),
                expected,
                "{query} over the kept docs"
            );
        }
    }

    #[test]
    fn rounding() {
        let table = [
            (1.234_56, 1.2346),
            (0.000_04, 0.0001),
            (0.000_05, 0.0001),
            (2.0, 2.0),
            (0.0, 0.0),
        ];
        for (score, expected) in table {
            assert!((round_score(score) - expected).abs() < 1e-12, "{score}");
        }
    }
}
