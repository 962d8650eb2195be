//! A company skill in the Agent Skills layout: a folder named for the skill holding a `SKILL.md` whose YAML
//! front matter gives its `name` and `description`, and optional extra files beside it. The server refuses
//! what this refuses when a skill is saved; a runner and `sky setup` check it again before writing a
//! skill's folder, so a name can never point outside the skills folder.

/// The file every skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";
pub const MAX_NAME_CHARS: usize = 64;
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Whether `name` is a skill name: 1–64 lowercase letters, digits and hyphens, not starting or ending
/// with a hyphen, without two in a row (the Agent Skills rule), and not a Windows device name (it is
/// also the folder's name on every runner).
pub fn is_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        // The name is a folder on every runner, Windows too, where `con` or `com1` is a device.
        && !crate::paths::windows_device(name)
}

/// What a `SKILL.md`'s front matter says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    pub name: String,
    pub description: String,
}

/// Reads the front matter of a `SKILL.md`: the lines between a first `---` line and the next, as
/// `key: value` pairs (values may be quoted, or folded with `>`/`|` over indented lines). Only `name` and
/// `description` are required and checked; other keys (`license`, `metadata`, …) are kept in the file as
/// they are. `Err` finishes "the front matter …" or names the field.
pub fn front_matter(skill_md: &str) -> Result<FrontMatter, String> {
    let text = skill_md.strip_prefix('\u{feff}').unwrap_or(skill_md);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("`SKILL.md` must start with a `---` line opening its YAML front matter".into());
    }
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        match (indented, fields.last_mut()) {
            // A continuation of the previous key's value (a folded or block scalar, or a nested map).
            (true, Some((_, value))) => {
                if !value.is_empty() {
                    value.push(' ');
                }
                value.push_str(line.trim());
            }
            _ if line.trim().is_empty() || line.trim_start().starts_with('#') => {}
            _ => {
                let (key, value) = line
                    .split_once(':')
                    .ok_or_else(|| format!("the front matter line {line:?} is not `key: value`"))?;
                let value = value.trim();
                let value = if matches!(value, ">" | "|" | ">-" | "|-") { "" } else { value };
                let key = key.trim();
                // YAML leaves a repeated key to the parser: one reader would see the first, another the last.
                if fields.iter().any(|(k, _)| k == key) {
                    return Err(format!("the front matter names `{key}` twice; keep one"));
                }
                fields.push((key.to_owned(), unquote(value).to_owned()));
            }
        }
    }
    if !closed {
        return Err("the front matter must end with a `---` line".into());
    }
    let field = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v.trim().to_owned());
    let name = field("name").filter(|n| !n.is_empty()).ok_or("the front matter needs a `name`")?;
    if !is_name(&name) {
        return Err(format!(
            "`name` must be 1–{MAX_NAME_CHARS} lowercase letters, digits and single hyphens, not starting or ending \
             with one, and not a Windows device name like `con` (got {name:?})"
        ));
    }
    let description = field("description").filter(|d| !d.is_empty()).ok_or("the front matter needs a `description`")?;
    let n = description.chars().count();
    if n > MAX_DESCRIPTION_CHARS {
        return Err(format!("`description` must be at most {MAX_DESCRIPTION_CHARS} characters (got {n})"));
    }
    Ok(FrontMatter { name, description })
}

fn unquote(v: &str) -> &str {
    let quoted =
        v.len() >= 2 && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')));
    if quoted {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_lowercase_words_joined_by_single_hyphens() {
        for ok in ["a", "pdf-forms", "release-notes-2", &"x".repeat(64)] {
            assert!(is_name(ok), "{ok}");
        }
        for bad in ["", "PDF", "-a", "a-", "a--b", "a_b", "a b", "../x", "a/b", &"x".repeat(65), "é"] {
            assert!(!is_name(bad), "{bad}");
        }
    }

    #[test]
    fn front_matter_gives_name_and_description() {
        let md =
            "---\nname: pdf-forms\ndescription: \"Fill PDF forms: use when asked to.\"\nlicense: MIT\n---\n# Body\n";
        let fm = front_matter(md).unwrap();
        assert_eq!(fm.name, "pdf-forms");
        assert_eq!(fm.description, "Fill PDF forms: use when asked to.");
        let folded = "---\nname: a\ndescription: >\n  two\n  lines\n---\n";
        assert_eq!(front_matter(folded).unwrap().description, "two lines");
    }

    #[test]
    fn front_matter_refusals_say_what_is_wrong() {
        assert!(front_matter("# no front matter").unwrap_err().contains("must start with"));
        assert!(front_matter("---\nname: a\ndescription: b\n").unwrap_err().contains("end with"));
        assert!(front_matter("---\ndescription: b\n---\n").unwrap_err().contains("needs a `name`"));
        assert!(front_matter("---\nname: a\n---\n").unwrap_err().contains("needs a `description`"));
        assert!(front_matter("---\nname: Bad_Name\ndescription: b\n---\n").unwrap_err().contains("`name` must be"));
        let long = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1025));
        assert!(front_matter(&long).unwrap_err().contains("at most 1024"));
        assert!(front_matter("---\nname a\n---\n").unwrap_err().contains("not `key: value`"));
        let twice = "---\nname: a\ndescription: b\nname: c\n---\n";
        assert!(front_matter(twice).unwrap_err().contains("names `name` twice"));
        assert!(front_matter("---\nname: nul\ndescription: b\n---\n").unwrap_err().contains("`name` must be"));
    }
}
