#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: validation_report
short_description: Write a validation run's reports on the controller
version_added: 0.1.0
description:
  - "Writes, under C(<root>/<timestamp>/): C(summary.json) with C({nodes: {NAME: {bucket, causes, peer}}}), C(summary.txt) (a table),
    C(junit.xml) (one test case per check), C(nodes/<node>.json) and C(nodes/<node>.md) for every node,
    and C(letters/<node>.txt) (the vendor letter) for every bucket C node."
  - "C(index.html): one self-contained page (no script, style, font or image from elsewhere; it works from C(file://)):
    the nodes by bucket with their causes in a sortable table, a node x peer heatmap of per-HCA bandwidth when several peers
    produced figures, and per node what is not healthy, charts of its per-HCA host-memory and GPUDirect RDMA figures and its
    node-level throughput against the healthy range and reject line, the message-size sweep and the baseline history when
    present, and links to its evidence bundle and vendor letter. The charts are drawn by matplotlib as inline SVG, node text as
    plain text (never mathtext). A Content-Security-Policy allows only the page's own style sheet and script."
  - C(summary.md) holds the same facts in Markdown, for chat and tickets.
  - "C(netval.prom): a node_exporter textfile with C(netval_validation_nodes), C(netval_node_bucket{node,bucket}),
    C(netval_validation_run_incomplete{node}) and C(netval_last_run_timestamp_seconds{node,playbook=\"validate\"})."
  - The run folder is written atomically and never overwritten; C(<root>/latest) is then pointed at it. C(latest) is only
    replaced when it is this module's symlink to a run folder; a file, a directory or another symlink of that name is an error,
    reported before anything is written.
  - A node under test is not trusted. Every node result first passes the controller's trust boundary
    (C(plugins/module_utils/reporting/node_input.py)). Its text is made valid UTF-8 with control and escape characters written out
    (C(\x1b)); lengths, entries, nesting and a node's text in all are bounded; numbers must be finite; RDMA device and
    interface names and PCI addresses are checked. What it had to change is a C(node_data) finding of that node (status
    unknown, a cause of ours), so bucket A becomes B, never C.
  - Each node's files and its parts of the page, the summary, C(summary.md) and C(junit.xml) are built on their own. A node
    result that cannot be rendered (a node result that is not a dict, a cause without C(cause) or C(detail), a test given as
    text, C(findings) that is not a list, a chart that cannot be drawn...) becomes that node's C(run_incomplete) verdict
    (bucket B), naming each field; the other nodes' reports are written as they are.
  - Node text in C(summary.md), C(nodes/<node>.md) and the letters is escaped for Markdown (line breaks written out,
    C(|), link, image and HTML syntax escaped, mentions in a code span, tool output in a letter as an indented code block).
  - Bad options (O(root), O(timestamp), a node name that is not one file name, O(sender), a C(latest) that is not ours)
    fail with a message naming each; nothing is written.
  - C(junit.xml) is well-formed XML whatever the text; characters XML 1.0 cannot hold are written as backslash escapes such as C(\x01).
  - "Once every node is known, the nodes are compared with each other (batch-relative grading, O(fleet_rules)): a figure
    far below the median of the same figure on the same tier and SKU, among this run's nodes and the accepted nodes' baselines
    under O(evidence_dir), while it meets the contract, is marginal with the cause C(fleet_outlier) (bucket B at worst, never C,
    never in a vendor letter), naming the median, the robust spread and how far below it is. A batch too small to judge, or
    split in two populations, says so in C(summary.txt) and C(summary.json)'s C(fleet)."
  - "When several node-peer pairs fail, C(summary.txt) names the node, known-good peer, peer HCA or rail common to the
    failures with the pairs that support it (C(common element: ...)), and C(summary.json) holds them as C(common_elements)."
  - "With O(link_baselines), C(<evidence_dir>/<node>/baseline) is pointed at this run's bundle for every node the report
    accepts whose bundle holds the controller's C(baseline.json): a node the comparison moved out of bucket A keeps its old
    baseline."
  - "Runs where the reports live, normally the controller (C(delegate_to: localhost), C(run_once: true))."
author:
  - gpufleet.netval maintainers (@gpufleet)
requirements:
  - matplotlib 3.6 or later for the page's charts (on the host that runs it, normally the controller); without it every
    report is still written, the page without charts and with a line saying why
options:
  root:
    description: Folder that holds every run's reports.
    type: path
    required: true
  timestamp:
    description: UTC timestamp of the run, such as C(20261130T014500Z).
    type: str
    required: true
  nodes:
    description:
      - Node name (one file name) to node result (bucket, causes, peer, tests, findings, ...).
      - C(tests), C(findings), C(causes) and C(ruled_out) must be lists when present; a cause is text or a dict with C(cause) and C(detail).
      - "Charted figures (C(value)) must be numbers or null and their C(threshold) well-formed. Optional: C(tests[].sweep), a list
        of C({bytes, value}) per message size, and C(history), a list of C({timestamp, figures: {test id: value}}) of the node's
        baseline, oldest first."
    type: dict
    required: true
  sender:
    description: C(signature) for the vendor letters.
    type: dict
    default: {}
  prediction:
    description:
      - The run's prediction made before its tests started (P(gpufleet.netval.run_prediction#filter)); the summary then gives
        predicted against actual (seconds since O(timestamp)) in C(summary.json)'s C(prediction) and the summary table, with
        the nodes re-tested on a second peer (time the prediction, which plans no re-test, could not know of).
    type: dict
    default: {}
  hosts:
    description:
      - Every host of the run's limit (C(ansible_play_hosts_all)). A host without an entry in O(nodes) is reported as bucket B with
        the cause C(run_incomplete) (its result never reached the report), so every host is in every report; the summary's first
        line says how many of them are reported.
    type: list
    elements: str
    default: []
  textfile_dir:
    description:
      - node_exporter's C(--collector.textfile.directory). The run's textfile (also written as C(netval.prom) in the run folder)
        is then put there as C(netval_validate.prom), replaced atomically.
    type: path
  evidence_dir:
    description:
      - The controller's evidence folder (C(<evidence_dir>/<node>/<stamp>)). The accepted nodes' baselines under it
        (C(<node>/baseline/baseline.json), nodes not in this run) join the comparison with siblings.
    type: path
  fleet_rules:
    description:
      - Tier name to that tier's C(fleet_rules) (the resolved tier profile's; P(gpufleet.netval.tier_profile_errors#filter) lists
        the keys). A tier without an entry is graded against the contract only, and C(summary.txt) says so.
    type: dict
    default: {}
  link_baselines:
    description:
      - Point C(<evidence_dir>/<node>/baseline) at this run's bundle for every node the report accepts (bucket A after the
        comparison) whose bundle folder holds C(baseline.json). Needs O(evidence_dir).
    type: bool
    default: false
  peer_qualification:
    description:
      - Each node's qualification of the known-good peers (P(gpufleet.netval.qualify_peers#filter), peer to C(qualified),
        C(reasons), C(notes), C(checked)), one per node (nodes of different tiers grade a peer differently). They are merged per
        peer (qualified only where every node's view qualified it) into C(summary.json)'s C(peer_qualification); the summary
        and the page name every peer that left the pool and why.
    type: list
    elements: dict
    default: []
attributes:
  check_mode:
    description: Writes nothing in check mode.
    support: full
  diff_mode:
    description: Reports no diff.
    support: none
'''

EXAMPLES = r'''
- name: Write the run's reports
  gpufleet.netval.validation_report:
    root: "{{ playbook_dir }}/../reports"
    timestamp: "{{ netval_run_timestamp }}"
    nodes: "{{ node_results }}"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
run_dir:
  description: The run's report folder.
  returned: always
  type: str
summary_table:
  description: The summary table as text.
  returned: always
  type: str
letters:
  description: Paths of the vendor letters written.
  returned: always
  type: list
  elements: str
page:
  description: Path of the run's C(index.html).
  returned: always
  type: str
markdown:
  description: Path of the run's C(summary.md).
  returned: always
  type: str
textfile:
  description: Where the textfile was put in O(textfile_dir).
  returned: when O(textfile_dir) is given
  type: str
verdicts:
  description: Node name to its final C(bucket), C(causes) and C(counts), after the comparison with siblings.
  returned: always
  type: dict
baselines:
  description: Node name to the baseline link pointed at this run's bundle.
  returned: when O(link_baselines) is true
  type: dict
baseline_problems:
  description: Links that could not be moved, one sentence each (the report itself was written).
  returned: when O(link_baselines) is true
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.netval.plugins.module_utils import validate
from ansible_collections.gpufleet.netval.plugins.module_utils.reporting import report_task


def main():
    # The action plugin of the same name runs report_task.write on the controller; this runs it as a module, on the host
    # the task runs on.
    module = AnsibleModule(argument_spec=report_task.ARGUMENT_SPEC, supports_check_mode=True)
    validate.finish(module, report_task.write(module.params, module.check_mode))


if __name__ == '__main__':
    main()
