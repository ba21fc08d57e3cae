"""The shared input/output checks every parser goes through: pasted prompts, line limit, impossible figures."""
import pytest

from ansible_collections.gpufleet.netval.plugins.module_utils import tool_output
from ansible_collections.gpufleet.netval.plugins.module_utils.errors import ParseError

BODY = 'Image type:            FS3\nFW Version:            12.28.2006\n'


@pytest.mark.parametrize('prompt', [
    '$ sudo lspci -vvv -s 1a:00.0',
    'root@host:~# flint -d /dev/mst/mt4125_pciconf0 q',
    '[user@h ~]$ ibstat',
    'bishal@nixos ~/.config/dotfiles/ags-4 [main] $ nvidia-smi -q -x',
    'sh-5.1# /usr/bin/dcgmi diag --run 3 --fail-early',
    'bash-5.1# lsmod',
    'root@nvidia-dcgm-exporter-4f599:/$ dcgmi diag -r 2',
    '(venv) user@gpu-07:~/work$ sudo -E ib_write_bw -d mlx5_0 10.0.0.2',
    'gpu07:~ # ethtool -S eth0',
    '# ibv_devinfo -v',
])
def test_leading_prompt_and_command_line_is_removed(prompt):
    assert tool_output.prepare_text('flint', '\n' + prompt + '\n' + BODY) == '\n\n' + BODY


@pytest.mark.parametrize('trailing', ['root@host:~# ', '[user@h ~]$', '$', 'user@host:~$ ibstat', 'sh-5.1#'])
def test_trailing_prompt_line_is_removed(trailing):
    assert tool_output.prepare_text('flint', BODY + trailing + '\n\n') == BODY + '\n\n'


@pytest.mark.parametrize('line', [
    '# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5',  # nccl-tests' own comment
    '#bytes #iterations    BW peak[MB/sec]',
    '#',
    '> 2 1000 1.84 12.20',
    'Image type:            FS3',
    '$5 charge',
])
def test_tool_lines_that_start_like_a_prompt_are_kept(line):
    text = line + '\n' + BODY + line + '\n'
    assert tool_output.prepare_text('tool', text) == text


def test_keep_command_leaves_the_command_for_parsers_that_read_it():
    text = 'root@gpu07:~# sudo ib_write_bw -d mlx5_0 -D 10 10.0.0.2\n---\n'
    assert tool_output.prepare_text('perftest', text, keep_command=True) == 'ib_write_bw -d mlx5_0 -D 10 10.0.0.2\n---\n'
    assert tool_output.prepare_text('perftest', text) == '\n---\n'


def test_a_line_longer_than_the_limit_is_a_clear_error():
    with pytest.raises(ParseError, match='a line is 65537 characters long, more than the 65536'):
        tool_output.prepare_text('ibv_devinfo', 'hca_id:\tmlx5_0\n' + ' ' * 65536 + 'x\n')
    assert tool_output.prepare_text('ibv_devinfo', ' ' * 65536) == ' ' * 65536


@pytest.mark.parametrize('result, why', [
    ({'rows': [{'busbw_gbs': float('inf')}]}, r"result.rows\[0\].busbw_gbs = inf: not a finite number"),
    ({'latency_us': float('nan')}, 'not a finite number'),
    ({'t_typical_us': -1.5}, 'negative'),
    ({'ports': {1: {'lid': -1}}}, 'negative'),
    ({'lost_percent': 100.5}, 'a percentage above 100'),
    ({'effective_ber': 1.5}, 'a bit-error ratio above 1'),
    ({'rx_bytes': 2 ** 64 + 1}, 'larger than any counter'),
])
def test_impossible_figures_raise_naming_the_key(result, why):
    with pytest.raises(ParseError, match='impossible figure .*' + why):
        tool_output.check_figures('tool', result)


def test_possible_figures_pass_unchanged():
    result = {'root': -1, 'temperature_c': -12.0, 'lost_percent': 100.0, 'effective_ber': 1e-12, 'flag': True,
              'rows': [{'busbw_gbs': 95.1, 'wrong': 0}], 'name': 'x', 'none': None}
    assert tool_output.check_figures('tool', result, signed=('root', 'temperature_c')) is result


def test_the_decorator_prepares_checks_and_says_what_it_does():
    @tool_output.tool_parser('demo', signed=('offset',))
    def parse_demo(text):
        return {'text': text, 'offset': -1, 'value': float(text.split()[-1])}

    assert parse_demo('$ demo\n2.5\n') == {'text': '\n2.5\n', 'offset': -1, 'value': 2.5}
    with pytest.raises(ParseError, match='impossible figure result.value = inf'):
        parse_demo('1e309')
    with pytest.raises(ParseError, match='expected text'):
        parse_demo(None)
    assert (parse_demo.tool, parse_demo.signed, parse_demo.keep_command) == ('demo', ('offset',), False)


def test_deeply_nested_input_is_a_clear_error():
    @tool_output.tool_parser('demo')
    def parse_nested(text):
        import json
        return {'doc': json.loads(text)}

    with pytest.raises(ParseError, match='nested too deeply'):
        parse_nested('[' * 60000)
