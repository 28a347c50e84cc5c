import { load } from 'webtensor';
import { runCheck } from '../check.js';

runCheck(load);
