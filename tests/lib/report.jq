# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# report.jq: jq definitions shared by the tests that read rdmacheck's JSON
# reports (the shim's, and rdmacheck-report --format=json's).  Use:
#   "$JQ" -L "$top_srcdir/tests/lib" 'include "report"; frames_inlined | ...'

# The document as format 1 has it, every stack an array of frame objects,
# whatever its format: format 2 writes each frame once, in the top-level
# "frames", and stacks as arrays of indices into it (those become the
# frames, "frames" goes and "format" is 1); format 1 is left as it is.  So
# one expression reads both, and an edited document is a valid format 1.
def frames_inlined:
  if (.frames | type) == "array" then
    .frames as $f
    | def inl: if type == "array"
               then map(if type == "number" then $f[.] else . end)
               else . end;
      def where: if type == "object" and has("stack")
                 then .stack |= inl else . end;
      def obj: if type == "object"
               then (if has("created") then .created |= where else . end)
                    | (if has("destroyed") then .destroyed |= where else . end)
               else . end;
      .findings |= map(
          (if has("stack") then .stack |= inl else . end)
          | (if (.objects | type) == "array"
             then .objects |= map(obj) else . end))
      | del(.frames)
      | if has("format") then .format = 1 else . end
  else . end;

# The inverse: a format-1 document as format 2 has it, each distinct frame
# once in "frames" (in the order the stacks first name them, and before
# "findings"), every stack an array of indices; a document with "frames"
# is left as it is.
def frames_tabled:
  if has("frames") then .
  else
    [.findings[]? | .stack[]?,
     (.objects[]? | (.created | objects | .stack[]?),
      (.destroyed | objects | .stack[]?))] as $all
    | (reduce $all[] as $fr ({ix: {}, f: []};
         ($fr | tojson) as $k
         | if .ix[$k] == null then .ix[$k] = (.f | length) | .f += [$fr]
           else . end)) as $t
    | def tab: if type == "array"
               then map($t.ix[tojson]) else . end;
      def where: if type == "object" and has("stack")
                 then .stack |= tab else . end;
      .format = 2
      | .findings |= map(
          (if has("stack") then .stack |= tab else . end)
          | (if (.objects | type) == "array"
             then .objects |= map(
                    if type == "object"
                    then (if has("created") then .created |= where
                          else . end)
                         | (if has("destroyed") then .destroyed |= where
                            else . end)
                    else . end)
             else . end))
      # "frames" before "findings", where readers look for it
      | to_entries
      | map(select(.key != "findings")) + [{key: "frames", value: $t.f}]
        + map(select(.key == "findings"))
      | from_entries
  end;
