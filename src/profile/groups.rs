//! SDK groups: candidates grouped by the exact SDK pin they are certified
//! under, each group with its own verified interpreter.
//!
//! `[[candidate]] sdk = "langbot-plugin==0.6.1"` puts a candidate in the
//! group of that pin; a candidate without it (or naming `[sdk] requirement`
//! itself) is in the default group, the one a profile without groups has.
//! Any exact pin is accepted: a group's interpreter is always provisioned
//! hash-locked (`--python` names the default group's interpreter only), from
//! the lock list the verifier carries for the pin (`gates/profiles/sdk/`),
//! else from one locked on demand from the index and cached
//! ([`crate::provision::on_demand`]). `[[sdk.group]]` may give such a
//! pin's wheel and RECORD digests, as `[sdk]` does for the default one.
//!
//! How a run certifies the groups: `src/pipeline/groups.rs`.

use super::{CandidateSpec, Profile, SdkPin};

/// One group: a pin and the candidates certified under it, in profile order.
#[derive(Debug, Clone)]
pub struct SdkGroup {
    /// The pin, with its digests when the profile gives them.
    pub pin: SdkPin,
    /// Whether this is `[sdk] requirement`'s group (the run's own interpreter).
    pub default: bool,
    /// Its candidates.
    pub candidates: Vec<CandidateSpec>,
}

/// `requirement` without whitespace, for comparing pins.
pub fn squeeze(requirement: &str) -> String {
    requirement.split_whitespace().collect()
}

/// The folder name of a group's evidence under `DIR/groups/`:
/// `langbot-plugin-0.6.1` for `langbot-plugin==0.6.1`.
pub fn slug(requirement: &str) -> String {
    squeeze(requirement)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .replace("--", "-")
}

/// Whether `requirement` is an exact `langbot-plugin==V` pin with a PEP 440
/// version `V`.
fn exact_pin(requirement: &str) -> bool {
    let req = squeeze(requirement);
    req.strip_prefix("langbot-plugin==")
        .is_some_and(|v| !v.is_empty() && v.parse::<pep440_rs::Version>().is_ok())
}

impl Profile {
    /// The group a candidate is certified in: its `sdk`, else `[sdk] requirement`.
    pub fn group_of(&self, candidate: &CandidateSpec) -> String {
        match &candidate.sdk {
            Some(pin) if squeeze(pin) != squeeze(&self.sdk.requirement) => squeeze(pin),
            _ => squeeze(&self.sdk.requirement),
        }
    }

    /// The groups, the default first, then the others in the order their
    /// first candidate appears. A profile without `[[candidate]] sdk` has one.
    pub fn sdk_groups(&self) -> Vec<SdkGroup> {
        let default = squeeze(&self.sdk.requirement);
        let mut out = vec![SdkGroup {
            pin: SdkPin {
                groups: Vec::new(),
                ..self.sdk.clone()
            },
            default: true,
            candidates: Vec::new(),
        }];
        for c in &self.candidates {
            let group = self.group_of(c);
            let at = match out
                .iter()
                .position(|g| squeeze(&g.pin.requirement) == group)
            {
                Some(at) => at,
                None => {
                    let digests = self
                        .sdk
                        .groups
                        .iter()
                        .find(|g| squeeze(&g.requirement) == group);
                    out.push(SdkGroup {
                        pin: SdkPin {
                            requirement: group.clone(),
                            wheel_sha256: digests.and_then(|d| d.wheel_sha256.clone()),
                            record_sha256: digests.and_then(|d| d.record_sha256.clone()),
                            extra_distributions: Vec::new(),
                            groups: Vec::new(),
                        },
                        default: group == default,
                        candidates: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            out[at].candidates.push(c.clone());
        }
        out
    }

    /// This profile as the run of the group of `requirement` reads it: its
    /// `[sdk]` is that group's pin (so every gate pins that version), every
    /// other key unchanged. `None` when no group has that pin.
    pub fn for_group(&self, requirement: &str) -> Option<Profile> {
        let group = self
            .sdk_groups()
            .into_iter()
            .find(|g| squeeze(&g.pin.requirement) == squeeze(requirement))?;
        if group.default {
            return Some(self.clone());
        }
        Some(Profile {
            sdk: group.pin,
            ..self.clone()
        })
    }
}

/// Checks every candidate's `sdk` and every `[[sdk.group]]` (see the module
/// docs).
///
/// # Errors
/// A sentence naming the candidate (or table), the pin, what was expected
/// and what to do.
pub fn check(profile: &Profile) -> Result<(), String> {
    let default = squeeze(&profile.sdk.requirement);
    for c in &profile.candidates {
        let Some(pin) = &c.sdk else { continue };
        if !exact_pin(pin) {
            return Err(format!(
                "candidate {:?}: sdk is {pin:?}; expected an exact pin with a PEP 440 version, like \
                 \"langbot-plugin==0.6.1\"",
                c.path
            ));
        }
    }
    if !profile
        .candidates
        .iter()
        .any(|c| profile.group_of(c) == default)
    {
        return Err(format!(
            "every candidate names an sdk other than [sdk] requirement {:?}; expected at least one \
             candidate in its group (the group whose interpreter --python names and the suites use): \
             set [sdk] requirement to one of the candidates' pins",
            profile.sdk.requirement
        ));
    }
    let named: Vec<String> = profile
        .candidates
        .iter()
        .map(|c| profile.group_of(c))
        .collect();
    let mut seen = Vec::new();
    for g in &profile.sdk.groups {
        let pin = squeeze(&g.requirement);
        if pin == default || !named.contains(&pin) {
            return Err(format!(
                "[[sdk.group]] requirement {:?}: expected the pin of some [[candidate]] sdk other than \
                 [sdk] requirement, found none naming it; remove the table or fix its requirement",
                g.requirement
            ));
        }
        if seen.contains(&pin) {
            return Err(format!(
                "[[sdk.group]] requirement {:?} appears twice; expected one table per pin",
                g.requirement
            ));
        }
        seen.push(pin);
        for (key, value) in [
            ("wheel_sha256", &g.wheel_sha256),
            ("record_sha256", &g.record_sha256),
        ] {
            if let Some(v) = value {
                if v.len() != 64
                    || !v
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                {
                    return Err(format!(
                        "[[sdk.group]] {:?}: {key} is {v:?}; expected 64 lowercase hex digits (a sha256)",
                        g.requirement
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::profile::parse;

    const HEAD: &str = "name = \"t\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n";

    fn profile(rest: &str) -> Result<crate::profile::Profile, String> {
        parse(&format!("{HEAD}{rest}"), "test.toml").map_err(|e| e.to_string())
    }

    #[test]
    fn candidates_without_sdk_make_one_default_group() {
        let p = profile("[[candidate]]\npath = \"a\"\n[[candidate]]\npath = \"b\"\n").unwrap();
        let groups = p.sdk_groups();
        assert_eq!(groups.len(), 1);
        assert!(groups[0].default);
        assert_eq!(groups[0].pin.requirement, "langbot-plugin==0.6.0b5");
        assert_eq!(groups[0].candidates.len(), 2);
    }

    #[test]
    fn a_carried_pin_makes_a_group_of_its_own_with_its_digests() {
        let p = profile(
            "[[sdk.group]]\nrequirement = \"langbot-plugin==0.6.1\"\nwheel_sha256 = \"5607b4c787a92259b4a1f7beb4bdca9f371e37b316eaf8f316d2448e888da77e\"\n\
             [[candidate]]\npath = \"x/a\"\n\
             [[candidate]]\npath = \"x/b\"\nsdk = \"langbot-plugin == 0.6.1\"\n\
             [[candidate]]\npath = \"x/c\"\nsdk = \"langbot-plugin==0.6.0b5\"\n",
        )
        .unwrap();
        let groups = p.sdk_groups();
        let names: Vec<(String, bool, Vec<&str>)> = groups
            .iter()
            .map(|g| {
                (
                    g.pin.requirement.clone(),
                    g.default,
                    g.candidates.iter().map(|c| c.path.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("langbot-plugin==0.6.0b5".into(), true, vec!["x/a", "x/c"]),
                ("langbot-plugin==0.6.1".into(), false, vec!["x/b"]),
            ]
        );
        assert_eq!(
            groups[1].pin.wheel_sha256.as_deref(),
            Some("5607b4c787a92259b4a1f7beb4bdca9f371e37b316eaf8f316d2448e888da77e")
        );
        let narrowed = p.for_group("langbot-plugin==0.6.1").unwrap();
        assert_eq!(narrowed.sdk.version(), "0.6.1");
        assert_eq!(narrowed.candidates.len(), 3);
        assert!(p.for_group("langbot-plugin==0.7.0").is_none());
        assert_eq!(super::slug("langbot-plugin==0.6.1"), "langbot-plugin-0.6.1");
    }

    #[test]
    fn an_uncarried_exact_pin_is_accepted_as_a_group_of_its_own() {
        let p = profile(
            "[[candidate]]\npath = \"x/a\"\n[[candidate]]\npath = \"x/b\"\nsdk = \"langbot-plugin==0.7.4\"\n",
        )
        .unwrap();
        let groups = p.sdk_groups();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[1].pin.requirement, "langbot-plugin==0.7.4");
        assert!(crate::provision::builtin::for_requirement("langbot-plugin==0.7.4").is_none());
    }

    #[test]
    fn ranges_bad_versions_empty_default_groups_and_stray_group_tables_are_refused() {
        for (rest, expect) in [
            (
                "[[candidate]]\npath = \"a\"\n[[candidate]]\npath = \"b\"\nsdk = \"langbot-plugin>=0.6.1\"\n",
                "expected an exact pin",
            ),
            (
                "[[candidate]]\npath = \"a\"\n[[candidate]]\npath = \"b\"\nsdk = \"langbot-plugin==not.a.version!\"\n",
                "PEP 440",
            ),
            (
                "[[candidate]]\npath = \"b\"\nsdk = \"langbot-plugin==0.6.1\"\n",
                "expected at least one candidate in its group",
            ),
            (
                "[[sdk.group]]\nrequirement = \"langbot-plugin==0.6.1\"\n[[candidate]]\npath = \"a\"\n",
                "[[sdk.group]] requirement \"langbot-plugin==0.6.1\"",
            ),
            (
                "[[sdk.group]]\nrequirement = \"langbot-plugin==0.6.1\"\nrecord_sha256 = \"ABC\"\n\
                 [[candidate]]\npath = \"a\"\n[[candidate]]\npath = \"b\"\nsdk = \"langbot-plugin==0.6.1\"\n",
                "record_sha256 is \"ABC\"",
            ),
        ] {
            let err = profile(rest).unwrap_err();
            assert!(err.contains(expect), "{rest}: {err}");
        }
    }
}
