//! The repository's own configuration, made inert: every setting of
//! `.git/config` (and of the files it includes, and of `config.worktree`)
//! whose value is a command git could run is overridden on the command line.
//!
//! Git has no switch that ignores only the repository's configuration
//! (`GIT_CONFIG_NOSYSTEM` and `GIT_CONFIG_GLOBAL` cover the other two
//! scopes), but a command-line `-c` is read last and wins over it. So the
//! keys git sees are listed first (`git config --list -z`, which reads
//! configuration and runs nothing), and each command-valued one is
//! given an empty or disabling value: filter drivers (`filter.<d>.clean`,
//! `.smudge`, `.process`, and `.required=false` so git does not fail on the
//! emptied driver), diff drivers (`diff.<d>.textconv`, `.command`,
//! `diff.external`), merge drivers, editors, pagers, credential helpers,
//! `core.sshCommand`, `core.gitProxy`, `core.askPass`, signing programs.
//! `core.fsmonitor` and `core.hooksPath` are fixed for every call by
//! [`super::HERMETIC_CONFIG`] already; listed keys get them again.

/// The value that disables the command-valued setting `key` (as `git config
/// --list` prints it: section and name lower-case, subsection as
/// written), or `None` when `key` names no command.
pub fn disabling_value(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let (section, rest) = lower.split_once('.')?;
    // `name` is the last dotted part; a subsection may itself hold dots.
    let name = rest.rsplit('.').next().unwrap_or(rest);
    let has_subsection = rest.contains('.');
    match (section, has_subsection, name) {
        ("filter", true, "clean" | "smudge" | "process") => Some(""),
        ("filter", true, "required") => Some("false"),
        ("diff", true, "textconv" | "command") => Some(""),
        ("diff", false, "external") => Some(""),
        ("merge", true, "driver") => Some(""),
        ("core", false, "fsmonitor") => Some("false"),
        ("core", false, "hookspath") => Some("/dev/null"),
        ("core", false, "sshcommand" | "gitproxy" | "askpass" | "editor" | "pager") => Some(""),
        ("sequence", false, "editor") => Some(""),
        ("credential", _, "helper") => Some(""),
        ("gpg", _, "program") => Some(""),
        ("pager", _, _) => Some("false"),
        ("uploadpack", false, "packobjectshook") => Some(""),
        ("remote", true, "uploadpack" | "receivepack" | "proxy") => Some(""),
        _ => None,
    }
}

/// `(key, value)` of every entry of `listing`, the output of `git config
/// --list -z` (`KEY NEWLINE VALUE NUL`, or `KEY NUL` for a key without a
/// value), in git's reading order.
pub fn parse_list_z(listing: &[u8]) -> Vec<(String, String)> {
    listing
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| {
            let text = String::from_utf8_lossy(e);
            match text.split_once('\n') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (text.into_owned(), String::new()),
            }
        })
        .collect()
}

/// `-c KEY=VALUE` argument pairs for every key of `listing` (see
/// [`parse_list_z`]) that names a command, in listing order, each key once.
pub fn overrides(listing: &[u8]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for (key, _) in parse_list_z(listing) {
        if let Some(value) = disabling_value(&key) {
            if seen.insert(key.clone()) {
                out.push("-c".to_string());
                out.push(format!("{key}={value}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_valued_key_is_disabled_and_nothing_else() {
        let listing = b"core.repositoryformatversion\n0\0filter.X.smudge\ntouch m\0\
filter.X.clean\ncat\nfilter.y.clean\0filter.X.process\0filter.X.required\0core.fsmonitor\0core.hookspath\0diff.y.textconv\0\
diff.external\0merge.z.driver\0core.sshcommand\0credential.helper\0\
credential.https://h.example.helper\0gpg.ssh.program\0pager.status\0user.name\0\
filter.X.smudge\0remote.origin.url\0remote.origin.uploadpack\0include.path\0";
        let pairs: Vec<String> = overrides(listing)
            .chunks(2)
            .map(|p| {
                assert_eq!(p[0], "-c");
                p[1].clone()
            })
            .collect();
        assert_eq!(
            pairs,
            [
                "filter.X.smudge=",
                "filter.X.clean=",
                "filter.X.process=",
                "filter.X.required=false",
                "core.fsmonitor=false",
                "core.hookspath=/dev/null",
                "diff.y.textconv=",
                "diff.external=",
                "merge.z.driver=",
                "core.sshcommand=",
                "credential.helper=",
                "credential.https://h.example.helper=",
                "gpg.ssh.program=",
                "pager.status=false",
                "remote.origin.uploadpack=",
            ]
        );
    }

    #[test]
    fn a_subsection_with_dots_keeps_its_case_and_the_name_is_the_last_part() {
        assert_eq!(disabling_value("filter.My.Driver.clean"), Some(""));
        assert_eq!(disabling_value("filter.clean"), None);
        assert_eq!(disabling_value("core.filemode"), None);
        assert_eq!(
            overrides(b"filter.My.Driver.clean\ncat\0"),
            ["-c", "filter.My.Driver.clean="]
        );
    }
}
